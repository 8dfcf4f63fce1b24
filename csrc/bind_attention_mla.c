/* bind_attention_mla.c: Python bindings for the attention_mla family (see bind_norm.c for the pattern). */
#include "bind.h"

PyMethodDef gb_attention_mla_methods[] = {
    {NULL, NULL, 0, NULL}};
