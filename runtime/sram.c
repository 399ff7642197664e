// sram.c: sparse SRAM for the emulator.  Part of runtime/.  A device's
// SRAM is addressed in vectors; pages of EMU_SRAM_PAGE_VECTORS appear when
// first touched, so a 10,440-device run costs what it touches, not 220 MiB
// a device.  Each vector carries when its last write lands (for the SRAM
// hazard check) and whether anything ever wrote it.
//
// Pages are carved in order out of slabs, each mapped from the kernel at
// once (mmap) and sized in whole runs of EMU_SRAM_SLAB_PAGES pages.  A
// slab's memory comes zeroed, so a new page is not zeroed again.
// sram_make() creates the pages of a whole range (a tensor about to be
// seeded) together, in one slab, and faults their memory in with one call
// (MADV_POPULATE_WRITE) rather than one fault per 4 KiB; a page made as
// something writes it is faulted in as touched, so a device that writes a
// few vectors holds a few system pages.  A
// page's header is padded so that its vectors start on a cache line: a
// 320-byte vector spans 5 lines, not 6.  The table of pages keeps each
// page's number beside it, so a look-up reads no page.
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS, madvise
#include "emu.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels refuse it (EINVAL) and pages fault in as touched
#endif

// The alignment of a page and of its vectors (a cache line).
#define SRAM_LINE 64
// Consecutive pages whose slots in the table share a line (16-byte slots).
#define SRAM_SLOT_GROUP 4

// Under AddressSanitizer a slab's room is poisoned until carved and each
// page is followed by a poisoned line, so an access past a page's vectors
// is caught as it was when each page was a block of its own.
#if defined(__SANITIZE_ADDRESS__)
#define SRAM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SRAM_ASAN 1
#endif
#endif
#ifdef SRAM_ASAN
#include <sanitizer/asan_interface.h>
#define SRAM_REDZONE SRAM_LINE
#else
#define SRAM_REDZONE 0
#define ASAN_POISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#endif
#if defined(__SSE2__) && !defined(SRAM_ASAN)
#include <emmintrin.h>  // sram_stream_vector's streaming stores
#endif

struct SramPage {
  uint32_t number;  // addr / EMU_SRAM_PAGE_VECTORS
  int64_t lands[EMU_SRAM_PAGE_VECTORS];
  bool written[EMU_SRAM_PAGE_VECTORS];
  alignas(SRAM_LINE) uint8_t data[];  // EMU_SRAM_PAGE_VECTORS * vector_bytes
};

struct SramSlot {
  uint32_t number;
  SramPage *page;  // NULL: an empty slot
};

struct SramSlab {
  void *base;      // what to unmap or free
  uint8_t *pages;  // where its pages start (base, or past it to a line)
  size_t bytes;    // from pages on
  bool mapped;     // mmap'd (else calloc'd)
};

void sram_init(Sram *s, int vector_bytes) {
  *s = (Sram){.vector_bytes = vector_bytes};
  for (int i = 0; i < EMU_SRAM_RECENT; i++) s->recent_number[i] = UINT32_MAX;
}

size_t sram_page_bytes(int vector_bytes) {
  size_t bytes = sizeof(SramPage) + (size_t)EMU_SRAM_PAGE_VECTORS * (size_t)vector_bytes;
  return (bytes + SRAM_LINE - 1) / SRAM_LINE * SRAM_LINE;
}

// From one page to the next in a slab (a redzone between under ASan).
static size_t stride(const Sram *s) { return sram_page_bytes(s->vector_bytes) + SRAM_REDZONE; }

// Knuth's multiplicative hash of the page's group of SRAM_SLOT_GROUP
// consecutive pages, which share a cache line of slots: a stream walking
// from page to page finds the next one's slot in the line it just read.
static uint32_t slot_of(uint32_t number, uint32_t nslots) {
  return ((number / SRAM_SLOT_GROUP * 2654435761u) * SRAM_SLOT_GROUP + number % SRAM_SLOT_GROUP) & (nslots - 1);
}

static void put(SramSlot *slots, uint32_t nslots, uint32_t number, SramPage *p) {
  uint32_t j = slot_of(number, nslots);
  while (slots[j].page) j = (j + 1) & (nslots - 1);
  slots[j] = (SramSlot){number, p};
}

static void grow(Sram *s) {
  uint32_t n = s->nslots ? s->nslots * 2 : 16;
  SramSlot *slots = aligned_alloc(SRAM_LINE, n * sizeof *slots);  // groups on lines
  if (slots)
    memset(slots, 0, n * sizeof *slots);
  else
    slots = xcalloc(n, sizeof *slots);  // says out of memory (or works, unaligned)
  for (uint32_t i = 0; i < s->nslots; i++)
    if (s->slots[i].page) put(slots, n, s->slots[i].number, s->slots[i].page);
  free(s->slots);
  s->slots = slots;
  s->nslots = n;
}

// The page `number` if it exists: the recent page of its slot, else the table.
static SramPage *find(Sram *s, uint32_t number) {
  uint32_t r = number % EMU_SRAM_RECENT;
  if (s->recent_number[r] == number && s->recent[r]) return s->recent[r];
  if (!s->nslots) return NULL;
  for (uint32_t j = slot_of(number, s->nslots); s->slots[j].page; j = (j + 1) & (s->nslots - 1))
    if (s->slots[j].number == number) {
      s->recent_number[r] = number;
      return s->recent[r] = s->slots[j].page;
    }
  return NULL;
}

// Faults in bytes [from, to) of slab memory now, a whole system page at a
// time (not past the slab's end, which is on one): the page after a page's
// end is its successor's in the slab.
static void populate(Sram *s, uint8_t *from, uint8_t *to) {
#ifdef MADV_POPULATE_WRITE
  if (!s->populate) return;
  uintptr_t ps = (uintptr_t)s->sys_page;
  uintptr_t a = (uintptr_t)from / ps * ps, b = MIN(((uintptr_t)to + ps - 1) / ps * ps, (uintptr_t)s->end);
  if (b > a && madvise((void *)a, b - a, MADV_POPULATE_WRITE)) s->populate = false;  // faults will do
#else
  (void)s, (void)from, (void)to;
#endif
}

// A new slab of at least `pages` pages, EMU_SRAM_SLAB_PAGES at a time
// (whole system pages, whatever the page's size), zeroed; pages are carved
// from it from now on (the rest of the last slab is never touched).
static void new_slab(Sram *s, uint32_t pages) {
  size_t page = stride(s);
  size_t n = ((size_t)pages + EMU_SRAM_SLAB_PAGES - 1) / EMU_SRAM_SLAB_PAGES * EMU_SRAM_SLAB_PAGES;
  SramSlab slab = {.bytes = n * page};
  uint8_t *base = NULL;
#ifdef MAP_ANONYMOUS
  void *m = mmap(NULL, slab.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m != MAP_FAILED) slab.base = base = m, slab.mapped = true;
  if (!s->nslabs) {
    long ps = sysconf(_SC_PAGESIZE);
    s->sys_page = ps > 0 ? (size_t)ps : 4096;
    s->populate = slab.mapped;
  }
#endif
  if (!base) {  // out of memory is then said as xcalloc says it
    slab.base = xcalloc(1, slab.bytes + SRAM_LINE);
    base = (uint8_t *)(((uintptr_t)slab.base + SRAM_LINE - 1) / SRAM_LINE * SRAM_LINE);
  }
  if (s->nslabs == s->slabs_cap) {
    s->slabs_cap = s->slabs_cap ? 2 * s->slabs_cap : 8;
    s->slabs = xrealloc(s->slabs, s->slabs_cap * sizeof *s->slabs);
  }
  slab.pages = base;
  s->slabs[s->nslabs++] = slab;
  s->next = base;
  s->end = base + slab.bytes;
  ASAN_POISON_MEMORY_REGION(base, slab.bytes);
}

// Page `number`, new (zeroed, unwritten), carved from the slab and entered
// in the table; the caller has made room for it in both.
static SramPage *carve(Sram *s, uint32_t number) {
  SramPage *p = (SramPage *)s->next;
  ASAN_UNPOISON_MEMORY_REGION(p, sram_page_bytes(s->vector_bytes));
  s->next += stride(s);
  p->number = number;
  if (2 * (s->npages + 1) > s->nslots) grow(s);  // keep the table at most half full
  put(s->slots, s->nslots, number, p);
  s->npages++;
  s->recent_number[number % EMU_SRAM_RECENT] = number;
  return s->recent[number % EMU_SRAM_RECENT] = p;
}

// The room left in the slab, in pages.
static size_t room(const Sram *s) { return s->next ? (size_t)(s->end - s->next) / stride(s) : 0; }

// The page `number`, created (zeroed, unwritten) if it does not exist.
static SramPage *page(Sram *s, uint32_t number) {
  SramPage *p = find(s, number);
  if (p) return p;
  if (!room(s)) new_slab(s, 1);
  return carve(s, number);  // faulted in as touched: a page made this way may stay mostly unwritten
}

void sram_make(Sram *s, uint32_t addr, uint32_t n) {
  if (!n) return;
  uint32_t first = addr / EMU_SRAM_PAGE_VECTORS, last = (uint32_t)(((uint64_t)addr + n - 1) / EMU_SRAM_PAGE_VECTORS);
  uint32_t missing = 0;
  for (uint32_t k = first; k <= last; k++) missing += !find(s, k);
  if (!missing) return;
  if (room(s) < missing) new_slab(s, missing);
  uint8_t *from = s->next;
  for (uint32_t k = first; k <= last; k++)
    if (!find(s, k)) carve(s, k);
  populate(s, from, s->next);
}

// Vector addr of page p (NULL: none), its landing tick and written flag.
static uint8_t *in_page(const Sram *s, SramPage *p, uint32_t addr, int64_t **lands, bool **written) {
  if (!p) return NULL;
  uint32_t i = addr % EMU_SRAM_PAGE_VECTORS;
  if (lands) *lands = &p->lands[i];
  if (written) *written = &p->written[i];
  return p->data + (size_t)i * (size_t)s->vector_bytes;
}

// The cursor's page when it holds `number`, else NULL.
static SramPage *at_cursor(const SramCursor *c, uint32_t number) {
  return c && c->page && c->number == number ? c->page : NULL;
}

uint8_t *sram_peek_at(Sram *s, SramCursor *c, uint32_t addr, int64_t **lands, bool **written) {
  uint32_t number = addr / EMU_SRAM_PAGE_VECTORS;
  SramPage *p = at_cursor(c, number);
  if (!p && (p = find(s, number)) && c) *c = (SramCursor){p, number};
  return in_page(s, p, addr, lands, written);
}

uint8_t *sram_vector_at(Sram *s, SramCursor *c, uint32_t addr, int64_t **lands, bool **written) {
  uint32_t number = addr / EMU_SRAM_PAGE_VECTORS;
  SramPage *p = at_cursor(c, number);
  if (!p) p = page(s, number);
  if (c) *c = (SramCursor){p, number};
  return in_page(s, p, addr, lands, written);
}

// The lines are fetched to stay in every level of the cache (locality 3),
// not as non-temporal (0): the stream reads them when its next event comes
// up, after the events of the other streams, and a non-temporal line the
// first level has evicted by then is in no other level, so the read waited
// on memory after all.  Kept, one thread emulates rack72's 64 MiB allreduce
// 1.13x and the bench's ring 1.12x as fast (bench/results/emu-throughput.txt),
// and the 16 MiB allreduce in 5.8-7.5 CPU seconds instead of 7.6-9.9.
void sram_prefetch(Sram *s, SramCursor *c, uint32_t addr) {
  int64_t *lands;
  bool *written;
  const uint8_t *v = sram_peek_at(s, c, addr, &lands, &written);
  if (!v) return;
  __builtin_prefetch(lands, 1, 3);
  __builtin_prefetch(written, 1, 3);
  for (int off = 0; off < s->vector_bytes; off += 64) __builtin_prefetch(v + off, 0, 3);
}

// Streaming stores write whole lines to memory without reading them into
// the cache first (and without evicting what the cache holds).  A vector a
// RECV takes lands in SRAM that was last touched long ago (a 64 MiB
// allreduce writes 4.8 GB of it), and is read again only much later, so
// the ordinary copy's read of each line before writing it was most of its
// cost: 1.12x the vector-hops per CPU second on rack72's 64 MiB allreduce,
// 1.27-1.50x on the bench's ring (bench/results/emu-throughput.txt).  A
// vector op's results keep the ordinary copy: what they write is mostly
// read again at once (streaming them too was no faster).
// Under AddressSanitizer (SRAM_ASAN) the copy is memcpy, which it checks.
#if defined(__SSE2__) && !defined(SRAM_ASAN)
void sram_stream_vector(uint8_t *dst, const uint8_t *src, int bytes) {
  if (((uintptr_t)dst | (uintptr_t)bytes) & 15) {  // a vector size or place the stores do not fit
    memcpy(dst, src, (size_t)bytes);
    return;
  }
  for (int off = 0; off < bytes; off += 16)
    _mm_stream_si128((__m128i *)(dst + off), _mm_loadu_si128((const __m128i *)(src + off)));
}

void sram_stream_fence(void) { _mm_sfence(); }
#else
void sram_stream_vector(uint8_t *dst, const uint8_t *src, int bytes) { memcpy(dst, src, (size_t)bytes); }
void sram_stream_fence(void) {}
#endif

uint8_t *sram_peek(Sram *s, uint32_t addr, int64_t **lands, bool **written) {
  return sram_peek_at(s, NULL, addr, lands, written);
}

uint8_t *sram_vector(Sram *s, uint32_t addr, int64_t **lands, bool **written) {
  return sram_vector_at(s, NULL, addr, lands, written);
}

uint8_t *sram_write_run(Sram *s, uint32_t addr, uint32_t *n, int64_t lands) {
  SramPage *p = page(s, addr / EMU_SRAM_PAGE_VECTORS);
  uint32_t i = addr % EMU_SRAM_PAGE_VECTORS;
  *n = MIN(*n, EMU_SRAM_PAGE_VECTORS - i);
  for (uint32_t k = i; k < i + *n; k++) p->lands[k] = lands, p->written[k] = true;
  return p->data + (size_t)i * (size_t)s->vector_bytes;
}

const uint8_t *sram_read_run(Sram *s, uint32_t addr, uint32_t *n) {
  SramPage *p = find(s, addr / EMU_SRAM_PAGE_VECTORS);
  uint32_t i = addr % EMU_SRAM_PAGE_VECTORS, k = i, end = MIN(i + *n, EMU_SRAM_PAGE_VECTORS);
  while (p && k < end && p->written[k]) k++;
  *n = p ? k - i : 0;
  return p && *n ? p->data + (size_t)i * (size_t)s->vector_bytes : NULL;
}

void sram_free(Sram *s) {
  for (uint32_t i = 0; i < s->nslabs; i++) {
    ASAN_UNPOISON_MEMORY_REGION(s->slabs[i].pages, s->slabs[i].bytes);
#ifdef MAP_ANONYMOUS
    if (s->slabs[i].mapped) {
      munmap(s->slabs[i].base, s->slabs[i].bytes);
      continue;
    }
#endif
    free(s->slabs[i].base);
  }
  free(s->slabs);
  free(s->slots);
  *s = (Sram){0};
}
