/* import-et.c — a PyTorch execution trace (ExecutionTraceObserver) read for tensor identity:
 * which storages each op reads, by the op's rf_id, and which the optimizer updates. Both
 * layouts are read: schema 1.0.1 (flat "inputs", "input_types", "rf_id") and 1.0.2-chakra
 * (nested "inputs": {"values", "types"}, "attrs": [{"name": "rf_id", ...}], "ctrl_deps"). */
#include "config.h"

#include "import-internal.h"
#include "json-stream.h"

#include <math.h>
#include <string.h>

typedef struct {
  gint64 id, parent, rf_id, tid, seq;
  guint64 index;      /* its place in the file's nodes */
  const char *name;   /* capped (import_capped_name), in the iteration's strings */
  gboolean optimizer; /* an Optimizer.step#... node */
  GArray *reads;      /* ImportTensorRef: tensors among its inputs */
  GArray *writes;     /* ImportTensorRef: among its outputs */
} Node;

typedef struct {
  const char *file;
  GStringChunk *strings; /* the iteration's */
  GArray *nodes;         /* Node, by id once read */
  guint *parent;         /* each node's parent, an index in nodes; G_MAXUINT: a root */
} Et;

static gboolean
int_value(const cJSON *v, gint64 *out)
{
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > 9e15)
    return FALSE;
  *out = (gint64)v->valuedouble;
  return TRUE;
}

/* A tensor value: [tensor_id, storage_id, offset, numel, itemsize, device]. */
static gboolean
tensor_ref(const cJSON *v, const char *type, ImportTensorRef *out)
{
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 6)
    return FALSE;
  gint64 storage, numel, itemsize;
  if (!int_value(cJSON_GetArrayItem(v, 1), &storage) ||
      !int_value(cJSON_GetArrayItem(v, 3), &numel) ||
      !int_value(cJSON_GetArrayItem(v, 4), &itemsize) || storage < 0 || numel < 1 ||
      numel > (G_GINT64_CONSTANT(1) << 44) || itemsize < 1 || itemsize > 16)
    return FALSE;
  out->storage = (guint64)storage;
  out->numel = (guint64)numel;
  out->itemsize = (guint)itemsize;
  out->dtype = itemsize == 4   ? STW_DTYPE_FP32
               : type != NULL && strstr(type, "Half") != NULL ? STW_DTYPE_FP16
                                                               : STW_DTYPE_BF16;
  return TRUE;
}

/* The tensors in VALUE of TYPE ("Tensor(float)", "GenericList[Tensor(float)]", ...). */
static void
collect(const cJSON *value, const char *type, GArray *out, guint depth)
{
  if (type == NULL || strstr(type, "Tensor") == NULL || depth > 8)
    return;
  ImportTensorRef ref;
  if (g_str_has_prefix(type, "Tensor") && tensor_ref(value, type, &ref)) {
    g_array_append_val(out, ref);
    return;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, value) {
    if (tensor_ref(item, type, &ref))
      g_array_append_val(out, ref);
    else if (cJSON_IsArray(item))
      collect(item, type, out, depth + 1);
  }
}

/* A node's values and types: flat (1.0.1) or nested (1.0.2-chakra). */
static void
values_of(const cJSON *node, const char *flat_values, const char *flat_types, GArray *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(node, flat_values);
  const cJSON *types = cJSON_GetObjectItemCaseSensitive(node, flat_types);
  if (cJSON_IsObject(v)) {
    types = cJSON_GetObjectItemCaseSensitive(v, "types");
    v = cJSON_GetObjectItemCaseSensitive(v, "values");
  }
  if (!cJSON_IsArray(v) || !cJSON_IsArray(types))
    return;
  /* side by side in one walk (an item by its index is a walk of the list each time) */
  for (const cJSON *x = v->child, *t = types->child; x != NULL && t != NULL;
       x = x->next, t = t->next)
    collect(x, cJSON_IsString(t) ? t->valuestring : NULL, out, 0);
}

static gint64
attr_of(const cJSON *node, const char *name, gint64 fallback)
{
  gint64 v;
  if (int_value(cJSON_GetObjectItemCaseSensitive(node, name), &v))
    return v;
  const cJSON *a;
  cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(node, "attrs")) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(a, "name");
    if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0 &&
        int_value(cJSON_GetObjectItemCaseSensitive(a, "value"), &v))
      return v;
  }
  return fallback;
}

static gboolean
et_node(const char *key, guint64 index, const char *text, gsize len, gpointer data,
        GError **error)
{
  (void)key;
  Et *et = data;
  g_autoptr(cJSON) n = cJSON_ParseWithLength(text, len);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(n, "name");
  gint64 id;
  if (!cJSON_IsObject(n) || !cJSON_IsString(name) ||
      !int_value(cJSON_GetObjectItemCaseSensitive(n, "id"), &id)) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: nodes[%" G_GUINT64_FORMAT "]: expected an object with a name and an id",
                et->file, index);
    return FALSE;
  }
  if (et->nodes->len >= STW_IMPORT_MAX_EVENTS) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: more than %u nodes (the importer's bound)", et->file, STW_IMPORT_MAX_EVENTS);
    return FALSE;
  }
  Node node = { .id = id, .parent = attr_of(n, "parent", attr_of(n, "ctrl_deps", -1)),
                .index = index, .rf_id = attr_of(n, "rf_id", -1),
                .name = import_capped_name(et->strings, name->valuestring),
                .tid = attr_of(n, "tid", 0), .seq = attr_of(n, "seq_id", -1),
                .optimizer = g_str_has_prefix(name->valuestring, "Optimizer.step"),
                .reads = g_array_new(FALSE, FALSE, sizeof(ImportTensorRef)),
                .writes = g_array_new(FALSE, FALSE, sizeof(ImportTensorRef)) };
  values_of(n, "inputs", "input_types", node.reads);
  values_of(n, "outputs", "output_types", node.writes);
  g_array_append_val(et->nodes, node);
  return TRUE;
}

static gboolean
et_member(const char *key, guint64 index, const char *text, gsize len, gpointer data,
          GError **error)
{
  (void)index;
  Et *et = data;
  if (strcmp(key, "schema") == 0 && (len < 2 || text[0] != '"')) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND,
                "%s: \"schema\" is not a string: not an execution trace", et->file);
    return FALSE;
  }
  return TRUE;
}

static void
et_clear(Et *et)
{
  for (guint i = 0; i < et->nodes->len; i++) {
    Node *n = &g_array_index(et->nodes, Node, i);
    g_array_unref(n->reads);
    g_array_unref(n->writes);
  }
  g_array_unref(et->nodes);
  g_free(et->parent);
}

static void
free_op(gpointer p)
{
  ImportEtOp *op = p;
  g_array_unref(op->reads);
  g_free(op->name);
  g_free(op);
}

static gint
node_by_id(gconstpointer a, gconstpointer b)
{
  const Node *x = a, *y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Each node's parent as an index into the nodes, sorted by id (a root — no parent, itself, or
 * an id not in the file — has none); FALSE, naming them, on two nodes of one id or a cycle of
 * parents, whose nodes no walk from a root would reach. Linear: each node is climbed from once. */
static gboolean
link_parents(Et *et, GError **error)
{
  guint n = et->nodes->len;
  for (guint i = 1; i < n; i++) {
    const Node *a = &g_array_index(et->nodes, Node, i - 1), *b = &g_array_index(et->nodes, Node, i);
    if (a->id == b->id) {
      g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                  "%s: nodes[%" G_GUINT64_FORMAT "] and nodes[%" G_GUINT64_FORMAT "] have the "
                  "same id, %" G_GINT64_FORMAT, et->file, MIN(a->index, b->index),
                  MAX(a->index, b->index), a->id);
      return FALSE;
    }
  }
  g_autoptr(GHashTable) index_of = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; i < n; i++)
    g_hash_table_insert(index_of, &g_array_index(et->nodes, Node, i).id, GUINT_TO_POINTER(i));
  et->parent = g_new(guint, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    const Node *x = &g_array_index(et->nodes, Node, i);
    gpointer v;
    et->parent[i] = x->parent != x->id &&
                    g_hash_table_lookup_extended(index_of, &x->parent, NULL, &v)
                        ? GPOINTER_TO_UINT(v) : G_MAXUINT;
  }
  /* a climb from each node not yet climbed, stamped with where it began: a node met again in
   * the same climb is on a cycle */
  g_autofree guint *climb = g_new(guint, MAX(n, 1));
  for (guint i = 0; i < n; i++)
    climb[i] = G_MAXUINT;
  for (guint i = 0; i < n; i++) {
    guint at = i;
    while (at != G_MAXUINT && climb[at] == G_MAXUINT) {
      climb[at] = i;
      at = et->parent[at];
    }
    if (at == G_MAXUINT || climb[at] != i)
      continue;
    g_autoptr(GString) ids = g_string_new(NULL);
    guint k = 0, on = at;
    do {
      g_string_append_printf(ids, "%s%" G_GINT64_FORMAT, k > 0 ? " -> " : "",
                             g_array_index(et->nodes, Node, on).id);
      on = et->parent[on];
    } while (on != at && ++k < 8);
    g_string_append_printf(ids, on == at ? " -> %" G_GINT64_FORMAT : " -> ...",
                           g_array_index(et->nodes, Node, at).id);
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: nodes[%" G_GUINT64_FORMAT "] (id %" G_GINT64_FORMAT ") is its own "
                "ancestor: the parents form a cycle (%s)", et->file,
                g_array_index(et->nodes, Node, at).index, g_array_index(et->nodes, Node, at).id,
                ids->str);
    return FALSE;
  }
  return TRUE;
}

static void build_tables(ImportIteration *it, Et *et);
static void build_events(ImportIteration *it, Et *et);

static gboolean
et_load(ImportIteration *it, const char *file, gboolean as_trace, GError **error)
{
  StwImportKind kind = stw_import_detect(file, error);
  if (kind == STW_IMPORT_AUTO)
    return FALSE;
  if (kind != STW_IMPORT_ET) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND,
                "%s: --et expects an execution trace (\"schema\" and \"nodes\"), not a %s file",
                file, stw_import_kind_names[kind]);
    return FALSE;
  }
  if (it->strings == NULL)
    it->strings = g_string_chunk_new(4096);
  Et et = { .file = file, .strings = it->strings,
            .nodes = g_array_new(FALSE, FALSE, sizeof(Node)) };
  static const char *const streamed[] = { "nodes", NULL };
  StwJsonStreamSpec spec = { .streamed = streamed, .max_element = STW_IMPORT_MAX_EVENT_BYTES,
                             .on_element = et_node, .on_member = et_member, .data = &et };
  if (!stw_json_stream_read(file, &spec, error)) {
    et_clear(&et);
    return FALSE;
  }
  it->rep->et_nodes = et.nodes->len;
  /* in the order the ops began (a node's id), which is not the file's in every schema */
  g_array_sort(et.nodes, node_by_id);
  if (!link_parents(&et, error)) {
    et_clear(&et);
    return FALSE;
  }
  build_tables(it, &et);
  if (as_trace)
    build_events(it, &et);
  et_clear(&et);
  return TRUE;
}

gboolean
import_et_load(ImportIteration *it, const char *file, GError **error)
{
  return et_load(it, file, FALSE, error);
}

gboolean
import_et_as_trace(ImportIteration *it, const char *file, GError **error)
{
  return et_load(it, file, TRUE, error);
}

static void
build_tables(ImportIteration *it, Et *et_in)
{
  Et et = *et_in;
  guint n_nodes = et.nodes->len;
  /* the optimizer's nodes: an Optimizer.step node and those under it. Each node's answer is its
   * own or its parent's: a climb to the first node answered, then answers down the path. */
  enum { UNKNOWN, OUTSIDE, INSIDE };
  g_autofree guint8 *optimizer = g_new0(guint8, MAX(n_nodes, 1));
  g_autofree guint *path = g_new(guint, MAX(n_nodes, 1));
  for (guint i = 0; i < n_nodes; i++) {
    guint len = 0, at = i;
    while (at != G_MAXUINT && optimizer[at] == UNKNOWN) {
      path[len++] = at;
      at = et.parent[at];
    }
    guint8 above = at == G_MAXUINT ? OUTSIDE : optimizer[at];
    while (len > 0) {
      guint x = path[--len];
      above = g_array_index(et.nodes, Node, x).optimizer ? INSIDE : above;
      optimizer[x] = above;
    }
  }
  it->et_reads = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, free_op);
  it->et_optimized = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  it->et_created = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  for (guint i = 0; i < et.nodes->len; i++) {
    Node *n = &g_array_index(et.nodes, Node, i);
    gboolean in_optimizer = optimizer[i] == INSIDE;
    for (guint k = 0; k < n->reads->len; k++) {
      const ImportTensorRef *ref = &g_array_index(n->reads, ImportTensorRef, k);
      gint64 s = (gint64)ref->storage;
      if (in_optimizer)
        g_hash_table_add(it->et_optimized, g_memdup2(&s, sizeof s));
    }
    /* a storage an op outputs without reading it (not a view, not in place) is made during
     * the run: not a parameter. Storage ids are the allocator's, so one that held a parameter
     * of another life can be made again: made anywhere in the run counts. */
    for (guint k = 0; k < n->writes->len; k++) {
      gint64 s = (gint64)g_array_index(n->writes, ImportTensorRef, k).storage;
      gboolean read = FALSE;
      for (guint j = 0; j < n->reads->len && !read; j++)
        read = (gint64)g_array_index(n->reads, ImportTensorRef, j).storage == s;
      if (!read)
        g_hash_table_add(it->et_created, g_memdup2(&s, sizeof s));
    }
    if (n->rf_id >= 0 && !g_hash_table_contains(it->et_reads, &n->rf_id)) {
      ImportEtOp *op = g_new(ImportEtOp, 1);
      op->name = g_strdup(n->name);
      op->reads = g_array_ref(n->reads);
      g_hash_table_insert(it->et_reads, g_memdup2(&n->rf_id, sizeof n->rf_id), op);
    }
  }
}

/* The execution trace's own ops as the importer's events: nested by their parents, timed by
 * their order alone (a node's start is its place in a walk of the tree, its end after its
 * last descendant's), for a trace of the iteration without durations or memory. */
static void
build_events(ImportIteration *it, Et *et)
{
  guint n = et->nodes->len;
  /* children in id order; the observer's own process and thread nodes are not ops */
  g_autofree guint *first = g_new(guint, MAX(n, 1)), *next = g_new(guint, MAX(n, 1));
  g_autofree guint *last = g_new(guint, MAX(n, 1));
  g_autofree gboolean *root = g_new0(gboolean, MAX(n, 1));
  for (guint i = 0; i < n; i++)
    first[i] = next[i] = last[i] = G_MAXUINT;
  for (guint i = 0; i < n; i++) {
    guint p = et->parent[i];
    if (p == G_MAXUINT) {
      root[i] = TRUE;
      continue;
    }
    if (first[p] == G_MAXUINT)
      first[p] = i;
    else
      next[last[p]] = i;
    last[p] = i;
  }
  it->evs = g_new0(ImportEvent, MAX(n, 1));
  it->n_evs = 0;
  g_autofree guint *stack = g_new(guint, MAX(n, 1) + 1);
  g_autofree guint *slot = g_new(guint, MAX(n, 1));
  g_autofree guint *child = g_new(guint, MAX(n, 1));
  double clock = 0;
  for (guint r = 0; r < n; r++) {
    if (!root[r])
      continue;
    guint top = 0;
    stack[top++] = r;
    /* a walk of the tree: a node's start when it is reached, its end when its subtree is done */
    child[r] = first[r];
    slot[r] = G_MAXUINT;
    const Node *x = &g_array_index(et->nodes, Node, r);
    if (!g_str_has_prefix(x->name, "[pytorch|profiler|execution_trace|")) {
      slot[r] = it->n_evs;
      it->evs[it->n_evs++] = (ImportEvent){ .ts = clock, .name = x->name,
                                            .tid = x->tid, .seq = x->seq, .rf_id = x->rf_id,
                                            .ext_id = -1, .pid = -1 };
    }
    clock += 1;
    while (top > 0) {
      guint at = stack[top - 1];
      guint c = child[at];
      if (c == G_MAXUINT) {
        if (slot[at] != G_MAXUINT)
          it->evs[slot[at]].end = clock;
        clock += 1;
        top--;
        continue;
      }
      child[at] = next[c];
      const Node *y = &g_array_index(et->nodes, Node, c);
      slot[c] = G_MAXUINT;
      if (!g_str_has_prefix(y->name, "[pytorch|profiler|execution_trace|")) {
        slot[c] = it->n_evs;
        it->evs[it->n_evs++] = (ImportEvent){ .ts = clock, .name = y->name,
                                              .tid = y->tid, .seq = y->seq, .rf_id = y->rf_id,
                                              .ext_id = -1, .pid = -1 };
      }
      clock += 1;
      child[c] = first[c];
      stack[top++] = c;
    }
  }
}
