// glibc's heap figures for allocation tests (malloc.h is not in Swift's Glibc module).
#ifndef SLUICE_HEAP_STATS_H
#define SLUICE_HEAP_STATS_H

#include <malloc.h>
#include <stddef.h>

/// Bytes of heap in use (mallinfo2's uordblks): allocated and not yet freed.
static inline size_t sluice_heap_bytes_in_use(void) { return mallinfo2().uordblks; }

#endif
