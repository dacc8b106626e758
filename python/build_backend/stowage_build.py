"""A PEP 517 build backend for the stowage package, in the tree and with no requirements, so
that `pip install ./python` works offline on a bare Python: the package is pure Python over the
C library (ctypes), and a wheel of it is a zip of its files and their metadata."""
import base64
import hashlib
import os
import tarfile
import zipfile

NAME = "stowage"
VERSION = "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "py3-none-any"


def _files():
    pkg = os.path.join(ROOT, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            yield os.path.join(NAME, name)


def _metadata():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Plan and replay chunk-based memory for training models larger than GPU "
            "memory (libstowage through ctypes)\nRequires-Python: >=3.9\n"
            "Provides-Extra: torch\nRequires-Dist: torch>=2.1; extra == \"torch\"\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, VERSION, readme))


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel_name = "%s-%s-%s.whl" % (NAME, VERSION, TAG)
    info = "%s-%s.dist-info" % (NAME, VERSION)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for rel in _files():
            with open(os.path.join(ROOT, rel), "rb") as f:
                data = f.read()
            z.writestr(rel, data)
            records.append(_record_line(rel, data))
        # the library of the checkout it was built from, where there is one: found first
        built = os.path.normpath(os.path.join(ROOT, "..", ".libs", "libstowage.so"))
        data = ("LIBRARY = %r\n" % (built if os.path.exists(built) else None)).encode()
        z.writestr(NAME + "/_built.py", data)
        records.append(_record_line(NAME + "/_built.py", data))
        for name, text in (("METADATA", _metadata()),
                           ("WHEEL", "Wheel-Version: 1.0\nGenerator: stowage_build\n"
                                     "Root-Is-Purelib: true\nTag: %s\n" % TAG)):
            data = text.encode("utf-8")
            z.writestr(info + "/" + name, data)
            records.append(_record_line(info + "/" + name, data))
        records.append(info + "/RECORD,,")
        z.writestr(info + "/RECORD", "\n".join(records) + "\n")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in list(_files()) + ["pyproject.toml", "README.md",
                                     os.path.join("build_backend", "stowage_build.py")]:
            t.add(os.path.join(ROOT, rel), arcname=os.path.join(base, rel))
        data = _metadata().encode("utf-8")
        import io
        info = tarfile.TarInfo(os.path.join(base, "PKG-INFO"))
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
