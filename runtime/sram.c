// sram.c: sparse SRAM for the emulator.  Part of runtime/.  A device's
// SRAM is addressed in vectors; pages of EMU_SRAM_PAGE_VECTORS appear when
// first touched, so a 10,440-device run costs what it touches, not 220 MiB
// a device.  Each vector carries when its last write lands (for the SRAM
// hazard check) and whether anything ever wrote it.
#include "emu.h"

#include <stdlib.h>
#include <string.h>

struct SramPage {
  uint32_t number;  // addr / EMU_SRAM_PAGE_VECTORS
  int64_t lands[EMU_SRAM_PAGE_VECTORS];
  bool written[EMU_SRAM_PAGE_VECTORS];
  uint8_t data[];   // EMU_SRAM_PAGE_VECTORS * vector_bytes
};

void sram_init(Sram *s, int vector_bytes) {
  *s = (Sram){.vector_bytes = vector_bytes};
}

static uint32_t slot_of(uint32_t number, uint32_t nslots) {
  return (number * 2654435761u) & (nslots - 1);  // Knuth's multiplicative hash
}

static void grow(Sram *s) {
  uint32_t n = s->nslots ? s->nslots * 2 : 16;
  SramPage **slots = xcalloc(n, sizeof *slots);
  for (uint32_t i = 0; i < s->nslots; i++) {
    SramPage *p = s->slots[i];
    if (!p) continue;
    uint32_t j = slot_of(p->number, n);
    while (slots[j]) j = (j + 1) & (n - 1);
    slots[j] = p;
  }
  free(s->slots);
  s->slots = slots;
  s->nslots = n;
}

// The page `number` if it exists: the recent page of its slot, else the table.
static SramPage *find(Sram *s, uint32_t number) {
  SramPage **recent = &s->recent[number % EMU_SRAM_RECENT];
  if (*recent && (*recent)->number == number) return *recent;
  if (!s->nslots) return NULL;
  for (uint32_t j = slot_of(number, s->nslots); s->slots[j]; j = (j + 1) & (s->nslots - 1))
    if (s->slots[j]->number == number) return *recent = s->slots[j];
  return NULL;
}

// The page `number`, created (zeroed, unwritten) if it does not exist.
static SramPage *page(Sram *s, uint32_t number) {
  SramPage *p = find(s, number);
  if (p) return p;
  if (2 * (s->npages + 1) > s->nslots) grow(s);  // keep the table at most half full
  size_t bytes = sizeof(SramPage) + (size_t)EMU_SRAM_PAGE_VECTORS * (size_t)s->vector_bytes;
  p = xcalloc(1, bytes);
  p->number = number;
  uint32_t j = slot_of(number, s->nslots);
  while (s->slots[j]) j = (j + 1) & (s->nslots - 1);
  s->slots[j] = p;
  s->npages++;
  return s->recent[number % EMU_SRAM_RECENT] = p;
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

void sram_prefetch(Sram *s, SramCursor *c, uint32_t addr, bool for_write) {
  int64_t *lands;
  bool *written;
  const uint8_t *v = for_write ? sram_vector_at(s, c, addr, &lands, &written) : sram_peek_at(s, c, addr, &lands, &written);
  if (!v) return;
  __builtin_prefetch(lands, 1, 0);
  __builtin_prefetch(written, 1, 0);
  for (int off = 0; off < s->vector_bytes; off += 64)
    if (for_write)
      __builtin_prefetch(v + off, 1, 0);
    else
      __builtin_prefetch(v + off, 0, 0);
}

uint8_t *sram_peek(Sram *s, uint32_t addr, int64_t **lands, bool **written) {
  return sram_peek_at(s, NULL, addr, lands, written);
}

uint8_t *sram_vector(Sram *s, uint32_t addr, int64_t **lands, bool **written) {
  return sram_vector_at(s, NULL, addr, lands, written);
}

size_t sram_page_bytes(int vector_bytes) {
  return sizeof(SramPage) + (size_t)EMU_SRAM_PAGE_VECTORS * (size_t)vector_bytes;
}

void sram_free(Sram *s) {
  for (uint32_t i = 0; i < s->nslots; i++) free(s->slots[i]);
  free(s->slots);
  *s = (Sram){0};
}
