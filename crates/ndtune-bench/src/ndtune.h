/* ndtune.h: what a host function of [verify] receives (docs/spec.md, "Host functions").
 *
 * ndtune writes this header beside the `main` it compiles your C file with, and includes it in
 * your file for you (`#include "ndtune.h"` is allowed, not needed). A reference fills the
 * expected outputs; a check decides itself whether the kernel's outputs are right:
 *
 *   void my_reference(const ndtune_args *args);
 *   int my_check(const ndtune_args *args, char *message, size_t size);   // 0: right
 */
#ifndef NDTUNE_H
#define NDTUNE_H

#include <stddef.h>
#include <string.h>

/* OpenCL C element types. */
typedef enum {
    NDTUNE_CHAR, NDTUNE_UCHAR, NDTUNE_SHORT, NDTUNE_USHORT, NDTUNE_INT, NDTUNE_UINT,
    NDTUNE_LONG, NDTUNE_ULONG, NDTUNE_HALF, NDTUNE_FLOAT, NDTUNE_DOUBLE
} ndtune_type;

/* A buffer argument, in [[args]] order. `data` holds, for a reference, the contents the kernel
   starts from, to be overwritten with the expected outputs; for a check, the kernel's outputs
   for the buffers named in [verify] outputs and the starting contents for the others. `initial`
   is always the contents the kernel started from. */
typedef struct {
    const char *name;
    ndtune_type type;
    size_t len;          /* elements */
    void *data;
    const void *initial;
} ndtune_buffer;

/* A scalar argument's value, in the member of its type: the bytes the kernel gets (a half's
   IEEE binary16 bits in `h`; C99 has no half type). */
typedef union {
    signed char c; unsigned char uc; short s; unsigned short us; int i; unsigned int ui;
    long long l; unsigned long long ul; unsigned short h; float f; double d;
} ndtune_scalar_value;

typedef struct {
    const char *name;
    ndtune_type type;
    ndtune_scalar_value value;
} ndtune_scalar;

/* A parameter's or constant's value: `text` is what `-D NAME=text` passes to the kernel; an
   integer is also in `i` and `f`, a real number in `f`. */
typedef enum { NDTUNE_INTEGER, NDTUNE_REAL, NDTUNE_TEXT } ndtune_kind;

typedef struct {
    const char *name;
    ndtune_kind kind;
    long long i;
    double f;
    const char *text;
} ndtune_value;

typedef struct {
    size_t num_buffers;
    ndtune_buffer *buffers;
    size_t num_scalars;
    const ndtune_scalar *scalars;
    size_t num_params;           /* the configuration's parameters: a check's only */
    const ndtune_value *params;
    size_t num_constants;        /* [constants] */
    const ndtune_value *constants;
} ndtune_args;

/* Lookups by name; NULL where there is none. */
static inline ndtune_buffer *ndtune_buffer_named(const ndtune_args *a, const char *name) {
    for (size_t k = 0; k < a->num_buffers; ++k)
        if (strcmp(a->buffers[k].name, name) == 0) return &a->buffers[k];
    return NULL;
}

static inline const ndtune_scalar *ndtune_scalar_named(const ndtune_args *a, const char *name) {
    for (size_t k = 0; k < a->num_scalars; ++k)
        if (strcmp(a->scalars[k].name, name) == 0) return &a->scalars[k];
    return NULL;
}

/* A parameter, else a constant. */
static inline const ndtune_value *ndtune_value_named(const ndtune_args *a, const char *name) {
    for (size_t k = 0; k < a->num_params; ++k)
        if (strcmp(a->params[k].name, name) == 0) return &a->params[k];
    for (size_t k = 0; k < a->num_constants; ++k)
        if (strcmp(a->constants[k].name, name) == 0) return &a->constants[k];
    return NULL;
}

/* The function ndtune calls, declared so that a wrong signature does not compile. */
#ifdef NDTUNE_REFERENCE
void NDTUNE_REFERENCE(const ndtune_args *args);
#endif
#ifdef NDTUNE_CHECK
int NDTUNE_CHECK(const ndtune_args *args, char *message, size_t size);
#endif

#endif
