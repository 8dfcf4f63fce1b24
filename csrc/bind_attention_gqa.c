/* bind_attention_gqa.c: Python bindings for the attention_gqa family (see bind_norm.c for the pattern). */
#include "bind.h"

PyMethodDef gb_attention_gqa_methods[] = {
    {NULL, NULL, 0, NULL}};
