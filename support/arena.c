// arena.c: region allocation for compiler IR.
// Part of support/.  One arena per compilation owns the AST, the graph IR and
// the topology IR; arena_free() releases all of it at once.  What
// arena_release rolls back (a trial compilation's IR) is kept as spare
// chunks and handed out again: the next trial then writes into pages the
// process already has instead of faulting fresh ones in (a page fault costs
// about as much as a tree schedule's placement of a route).
//
// Requests of half a chunk or more (a long unit's instructions, a big
// DAG's arrays) are carved from chunks of their own list, ARENA_BIG_CHUNK
// or larger, mapped on a huge-page boundary and advised as transparent
// huge pages (MADV_HUGEPAGE): a 256 MiB ring allreduce's 20 MB of
// instructions then fault in ten pages, not five thousand (a fault costs
// about 4 us on this project's machines, and they were a third of such a
// compile).  Smaller requests keep malloc's chunks, which reuse what the
// compiler frees (code generation's unit lists, as it emits them: on
// system10440 that is 400 MB of peak memory).
#define _GNU_SOURCE  // MADV_HUGEPAGE
#include "support.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

// Under AddressSanitizer a spare chunk is poisoned until it is handed out
// again, so a pointer kept into released memory is still caught.
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define SPARE_POISON(c) ASAN_POISON_MEMORY_REGION((c)->mem, (c)->size)
#define SPARE_UNPOISON(c) ASAN_UNPOISON_MEMORY_REGION((c)->mem, (c)->size)
#else
#define SPARE_POISON(c) ((void)(c))
#define SPARE_UNPOISON(c) ((void)(c))
#endif

// Chunks of small requests are this large.
#define ARENA_CHUNK_BYTES (64 * 1024)
#define ARENA_BIG_CHUNK ((size_t)4 << 20)   // ... and of big ones at least this
#define ARENA_HUGE_PAGE ((size_t)2 << 20)  // x86-64's transparent huge page
#define ARENA_ALIGN 16

struct ArenaChunk {
  ArenaChunk *next;
  size_t size, used;
  bool mapped;  // by huge_chunk (munmap), not malloc
  _Alignas(ARENA_ALIGN) unsigned char mem[];
};

// A chunk of at least `size` bytes mapped on a huge-page boundary, whole
// huge pages, advised huge (NULL: not to be had this way; the caller
// mallocs).  Not under AddressSanitizer, whose checks want malloc's.
static ArenaChunk *huge_chunk(size_t size) {
#if defined(MADV_HUGEPAGE) && !defined(ARENA_ASAN)
  size_t bytes = (sizeof(ArenaChunk) + size + ARENA_HUGE_PAGE - 1) & ~(ARENA_HUGE_PAGE - 1);
  char *map = mmap(NULL, bytes + ARENA_HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return NULL;
  char *at = (char *)(((uintptr_t)map + ARENA_HUGE_PAGE - 1) & ~(uintptr_t)(ARENA_HUGE_PAGE - 1));
  if (at > map) munmap(map, (size_t)(at - map));
  if (map + ARENA_HUGE_PAGE > at) munmap(at + bytes, (size_t)(map + ARENA_HUGE_PAGE - at));
  (void)madvise(at, bytes, MADV_HUGEPAGE);  // advice: without it, ordinary pages
  ArenaChunk *c = (ArenaChunk *)at;
  c->size = bytes - sizeof(ArenaChunk);
  c->mapped = true;
  return c;
#else
  (void)size;
  return NULL;
#endif
}

static ArenaChunk *new_chunk(size_t n, bool big) {
  size_t size = MAX(n, big ? ARENA_BIG_CHUNK : (size_t)ARENA_CHUNK_BYTES);
  ArenaChunk *c = big ? huge_chunk(size) : NULL;
  if (!c) {
    c = xmalloc(sizeof(ArenaChunk) + size);
    c->size = size;
    c->mapped = false;
  }
  return c;
}

static void free_chunk(ArenaChunk *c) {
  if (c->mapped) munmap(c, sizeof(ArenaChunk) + c->size);
  else free(c);
}

// A spare chunk of at least n bytes from list *spares, taken off it (NULL:
// none).  A list's spares are mostly of one size, so the first few looked
// at serve an ordinary request; a larger one looks a little further.
#define ARENA_SPARES_LOOKED_AT 16
static ArenaChunk *take_spare(ArenaChunk **spares, size_t n) {
  ArenaChunk **link = spares;
  for (int k = 0; *link && k < ARENA_SPARES_LOOKED_AT; link = &(*link)->next, k++)
    if ((*link)->size >= n) {
      ArenaChunk *c = *link;
      *link = c->next;
      SPARE_UNPOISON(c);
      return c;
    }
  return NULL;
}

void *arena_alloc_uncleared(Arena *a, size_t n) {
  n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  bool big = n >= ARENA_CHUNK_BYTES / 2;
  ArenaChunk **head = big ? &a->big : &a->head, *c = *head;
  if (!c || c->size - c->used < n) {
    c = take_spare(big ? &a->spare_big : &a->spare, n);
    if (!c) c = new_chunk(n, big);
    c->used = 0;
    c->next = *head;
    *head = c;
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

static void free_chunks(ArenaChunk *c) {
  for (ArenaChunk *next; c; c = next) {
    next = c->next;
    free_chunk(c);
  }
}

void arena_drop_spares(Arena *a) {
  for (ArenaChunk *c = a->spare; c; c = c->next) SPARE_UNPOISON(c);
  for (ArenaChunk *c = a->spare_big; c; c = c->next) SPARE_UNPOISON(c);
  free_chunks(a->spare);
  free_chunks(a->spare_big);
  a->spare = a->spare_big = NULL;
}

void arena_free(Arena *a) {
  arena_drop_spares(a);
  free_chunks(a->head);
  free_chunks(a->big);
  a->head = a->big = NULL;
  a->used = 0;
}

ArenaMark arena_mark(const Arena *a) {
  return (ArenaMark){.head = a->head, .head_used = a->head ? a->head->used : 0,
                     .big = a->big, .big_used = a->big ? a->big->used : 0, .used = a->used};
}

// Moves the chunks of list *head newer than `mark` onto *spares, and rolls
// the mark's chunk back to `used`.
static void release_list(ArenaChunk **head, ArenaChunk **spares, ArenaChunk *mark, size_t used) {
  while (*head != mark) {
    ArenaChunk *next = (*head)->next;
    SPARE_POISON(*head);
    (*head)->next = *spares;
    *spares = *head;
    *head = next;
  }
  if (*head) (*head)->used = used;
}

void arena_release(Arena *a, ArenaMark m) {
  release_list(&a->head, &a->spare, m.head, m.head_used);
  release_list(&a->big, &a->spare_big, m.big, m.big_used);
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
