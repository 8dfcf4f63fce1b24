/* bind_kvcache.c: Python bindings for the paged KV cache (see bind_norm.c for the pattern). */
#include "bind.h"

PyMethodDef gb_kvcache_methods[] = {
    {NULL, NULL, 0, NULL}};

/* Called from PyInit__core: add the cache type(s) to the module. */
int gb_kvcache_add_types(PyObject *module) {
    (void)module;
    return 0;
}
