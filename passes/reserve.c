// reserve.c: reservation tables: when a resource is busy, as sorted runs.
// Part of passes/; the link and unit schedulers of the schedule compiler ask
// "when is the earliest this link direction is free for n vectors?" and then
// take that time (002 s4.2: no two vectors on one link direction in one
// slot, every slot decided at compile time).
//
// A table is a sorted array of disjoint, non-adjacent intervals.  Queries
// binary-search the first interval that could overlap and walk forward;
// taking merges with the neighbours it touches.  A stream of n vectors is
// one interval however large n is.
#include "passes.h"

#include <stdlib.h>
#include <string.h>

// The index of the first interval whose end is after t (len if none).
static int first_ending_after(const Reservations *r, int64_t t) {
  int lo = 0, hi = r->len;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (r->iv[mid].end <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

bool resv_is_free(const Reservations *r, int64_t start, int64_t len) {
  if (len <= 0) return true;
  int i = first_ending_after(r, start);
  return i == r->len || r->iv[i].start >= start + len;
}

int64_t resv_earliest(const Reservations *r, int64_t from, int64_t len) {
  if (len <= 0) return from;
  int64_t t = from;
  for (int i = first_ending_after(r, t); i < r->len; i++) {
    if (r->iv[i].start >= t + len) break;  // the gap before interval i fits
    t = MAX(t, r->iv[i].end);
  }
  return t;
}

void resv_take(Reservations *r, int64_t start, int64_t len) {
  if (len <= 0) return;
  if (!resv_is_free(r, start, len)) die("reservation [%lld, %lld) overlaps", (long long)start, (long long)(start + len));
  int64_t end = start + len;
  int i = first_ending_after(r, start - 1);  // the first interval that may touch us
  int j = i;
  while (j < r->len && r->iv[j].start <= end) {  // absorb every interval we touch
    start = MIN(start, r->iv[j].start);
    end = MAX(end, r->iv[j].end);
    j++;
  }
  int removed = j - i;
  if (removed == 0) {
    if (r->len == r->cap) {
      r->cap = r->cap ? 2 * r->cap : 8;
      r->iv = xrealloc(r->iv, (size_t)r->cap * sizeof *r->iv);
    }
    memmove(r->iv + i + 1, r->iv + i, (size_t)(r->len - i) * sizeof *r->iv);
    r->len++;
  } else if (removed > 1) {
    memmove(r->iv + i + 1, r->iv + j, (size_t)(r->len - j) * sizeof *r->iv);
    r->len -= removed - 1;
  }
  r->iv[i] = (Interval){start, end};
}

int64_t resv_busy(const Reservations *r, int64_t from, int64_t to) {
  int64_t busy = 0;
  for (int i = first_ending_after(r, from); i < r->len && r->iv[i].start < to; i++)
    busy += MIN(to, r->iv[i].end) - MAX(from, r->iv[i].start);
  return busy;
}

void resv_free(Reservations *r) {
  free(r->iv);
  *r = (Reservations){0};
}
