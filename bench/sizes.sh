# bench/sizes.sh — sourced by the benchmarks that read the CLI's figures back: a size or a
# duration as the CLI prints it ("12.37 MiB", "3.26 ms") as a number of bytes or nanoseconds.
bytes() { echo "$1 $2" | awk '{ m = $2 == "B" ? 1 : $2 == "KiB" ? 1024 : $2 == "MiB" ? 1048576 : $2 == "GiB" ? 1073741824 : 1099511627776; printf "%.0f", $1 * m }'; }
ns() { echo "$1 $2" | awk '{ m = $2 == "ns" ? 1 : $2 == "us" ? 1e3 : $2 == "ms" ? 1e6 : 1e9; printf "%.0f", $1 * m }'; }
