// arena.c: region allocation for compiler IR.
// Part of support/.  One arena per compilation owns the AST, the graph IR and
// the topology IR; arena_free() releases all of it at once.
#include "support.h"

#include <stdlib.h>
#include <string.h>

// Chunks are at least this large; bigger requests get a chunk of their own.
#define ARENA_CHUNK_BYTES (64 * 1024)
#define ARENA_ALIGN 16

struct ArenaChunk {
  ArenaChunk *next;
  size_t size, used;
  _Alignas(ARENA_ALIGN) unsigned char mem[];
};

void *arena_alloc_uncleared(Arena *a, size_t n) {
  n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  ArenaChunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t size = MAX(n, (size_t)ARENA_CHUNK_BYTES);
    c = xmalloc(sizeof(ArenaChunk) + size);
    c->size = size;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->mem + c->used;
  c->used += n;
  a->used += n;
  return p;
}

void *arena_alloc(Arena *a, size_t n) { return memset(arena_alloc_uncleared(a, n), 0, n); }

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = arena_alloc(a, (size_t)n + 1);
  vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

void arena_free(Arena *a) {
  for (ArenaChunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  a->head = NULL;
  a->used = 0;
}

ArenaMark arena_mark(const Arena *a) {
  return (ArenaMark){.head = a->head, .head_used = a->head ? a->head->used : 0, .used = a->used};
}

void arena_release(Arena *a, ArenaMark m) {
  while (a->head != m.head) {
    ArenaChunk *next = a->head->next;
    free(a->head);
    a->head = next;
  }
  if (a->head) a->head->used = m.head_used;
  a->used = m.used;
}

void vec_reserve_(Arena *a, void **data, int *cap, int len, int n, size_t elem) {
  if (n <= *cap) return;
  void *p = arena_alloc_uncleared(a, elem * (size_t)n);  // past len is never read before it is written
  if (*data) memcpy(p, *data, elem * (size_t)len);
  *data = p;
  *cap = n;
}

void vec_grow_(Arena *a, void **data, int *cap, size_t elem) {
  int ncap = *cap ? *cap * 2 : 8;
  void *p = arena_alloc_uncleared(a, elem * (size_t)ncap);
  if (*data) memcpy(p, *data, elem * (size_t)*cap);
  *data = p;
  *cap = ncap;
}
