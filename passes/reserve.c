// reserve.c: reservation tables: when a resource is busy, as sorted runs.
// Part of passes/; the link and unit schedulers of the schedule compiler ask
// "when is the earliest this link direction is free for n vectors?" and then
// take that time (002 s4.2: no two vectors on one link direction in one
// slot, every slot decided at compile time).
//
// A table is a sorted array of disjoint, non-adjacent intervals.  Queries
// binary-search the first interval that could overlap and walk forward;
// taking merges with the neighbours it touches.  A stream of n vectors is
// one interval however large n is.  The array is a gap buffer, its free
// slots where the last take was: a program's instructions are taken one
// after another at rising times, often before what earlier nodes placed
// later, and an array that moved every later interval on each take spent
// 80 % of a compile in memmove (a transpose's 13,760 instructions a device
// filling gaps before a softmax's: 25.6 s of schedule, now 4.2 s).
#include "passes.h"

#include <stdlib.h>
#include <string.h>

// Interval i of r, in order, as an lvalue.
#define IV(r, i) ((r)->iv[(i) < (r)->gap ? (i) : (i) + (r)->cap - (r)->len])

// The index of the first interval whose end is after t (len if none).  A
// scheduler's queries on one table mostly move a little from the last one
// (a route's retries walk forward, the next route starts a little earlier),
// so the search gallops out from the last answer (1, 2, 4, ... intervals)
// and then bisects the bracket it found: O(log d) for an answer d intervals
// away, and memory it just touched.  The hint is a cache: a query of a
// const table may update it.
static int first_ending_after(const Reservations *r, int64_t t) {
  int h = MIN(r->hint, r->len), lo, hi;
  if (h == r->len || IV(r, h).end > t) {  // the answer is at h or before it
    hi = h, lo = h;
    for (int step = 1; lo > 0 && IV(r, lo - 1).end > t; step *= 2) hi = lo, lo = MAX(0, lo - step);
  } else {  // after h
    lo = h + 1, hi = h + 1;
    for (int step = 1; hi < r->len && IV(r, hi).end <= t; step *= 2) lo = hi + 1, hi = MIN(r->len, hi + step);
  }
  while (lo < hi) {  // the answer is in [lo, hi]
    int mid = lo + (hi - lo) / 2;
    if (IV(r, mid).end <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  ((Reservations *)r)->hint = lo;
  return lo;
}

bool resv_is_free(const Reservations *r, int64_t start, int64_t len) {
  if (len <= 0) return true;
  int i = first_ending_after(r, start);
  return i == r->len || IV(r, i).start >= start + len;
}

int64_t resv_earliest(const Reservations *r, int64_t from, int64_t len) {
  if (len <= 0) return from;
  int64_t t = from;
  for (int i = first_ending_after(r, t); i < r->len; i++) {
    if (IV(r, i).start >= t + len) break;  // the gap before interval i fits
    t = MAX(t, IV(r, i).end);
  }
  return t;
}

// The index of the first interval of c's table whose end is after t, from
// where the cursor last stood: a few steps forward, else the table's own
// search.  t is never before the cursor's last query.
static int cursor_seek(ResvCursor *c, int64_t t) {
  const Reservations *r = c->r;
  int i = c->i;
  if (i >= 0)
    for (int step = 0; i < r->len && IV(r, i).end <= t; step++, i++)
      if (step == RESV_CURSOR_STEPS) {
        ((Reservations *)r)->hint = i;
        i = -1;
        break;
      }
  if (i < 0) i = first_ending_after(r, t);
  ((Reservations *)r)->hint = c->i = i;
  return i;
}

ResvCursor resv_cursor(const Reservations *r) { return (ResvCursor){.r = r, .i = -1}; }

int64_t resv_cursor_earliest(ResvCursor *c, int64_t from, int64_t len) {
  if (len <= 0) return from;
  const Reservations *r = c->r;
  int64_t t = from;
  for (int i = cursor_seek(c, from); i < r->len; i++) {
    if (IV(r, i).start >= t + len) break;  // the gap before interval i fits
    t = MAX(t, IV(r, i).end);
  }
  return t;
}

int64_t resv_free_run(const Reservations *r, int64_t at) {
  int i = first_ending_after(r, at);
  if (i == r->len) return INT64_MAX;
  return IV(r, i).start <= at ? 0 : IV(r, i).start - at;
}

// An interval's share of its table's fingerprint (splitmix64's mix of its
// two ends).
static uint64_t interval_hash(Interval v) {
  uint64_t x = (uint64_t)v.start * 0x9e3779b97f4a7c15u ^ (uint64_t)v.end;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

ResvFingerprint resv_fingerprint(const Reservations *r) { return (ResvFingerprint){r->len, r->sum}; }

// Moves r's gap to before interval i.
static void move_gap(Reservations *r, int i) {
  int free_slots = r->cap - r->len;
  if (i < r->gap) memmove(r->iv + i + free_slots, r->iv + i, (size_t)(r->gap - i) * sizeof *r->iv);
  else if (i > r->gap) memmove(r->iv + r->gap, r->iv + r->gap + free_slots, (size_t)(i - r->gap) * sizeof *r->iv);
  r->gap = i;
}

// Room for one more interval (the gap kept where it is).
static void make_room(Reservations *r) {
  if (r->len < r->cap) return;
  int cap = r->cap ? 2 * r->cap : 8, back = r->len - r->gap;
  Interval *iv = xmalloc((size_t)cap * sizeof *iv);
  if (r->gap) memcpy(iv, r->iv, (size_t)r->gap * sizeof *iv);
  if (back) memcpy(iv + cap - back, r->iv + r->cap - back, (size_t)back * sizeof *iv);
  free(r->iv);
  r->iv = iv, r->cap = cap;
}

// Inserts v as interval i (the gap moved there).
static void insert_at(Reservations *r, int i, Interval v) {
  make_room(r);
  move_gap(r, i);
  r->iv[r->gap++] = v;
  r->len++;
}

// Removes intervals [i, i + n) (the gap moved to i).
static void remove_at(Reservations *r, int i, int n) {
  move_gap(r, i);
  r->len -= n;  // the back part now starts n slots later
}

// Takes [start, start + len), merging with the intervals it touches; fills
// u (if not NULL) with what it replaced.
static void take(Reservations *r, int64_t start, int64_t len, ResvUndo *u) {
  if (!resv_is_free(r, start, len)) die("reservation [%lld, %lld) overlaps", (long long)start, (long long)(start + len));
  int64_t end = start + len;
  int i = first_ending_after(r, start - 1);  // the first interval that may touch us
  int j = i;
  while (j < r->len && IV(r, j).start <= end) {  // absorb every interval we touch
    start = MIN(start, IV(r, j).start);
    end = MAX(end, IV(r, j).end);
    r->sum -= interval_hash(IV(r, j));
    j++;
  }
  int removed = j - i;
  if (u) {
    *u = (ResvUndo){.r = r, .at = i, .removed = removed};
    for (int k = 0; k < removed; k++) u->old[k] = IV(r, i + k);
  }
  Interval merged = {start, end};
  if (removed) remove_at(r, i, removed);
  insert_at(r, i, merged);
  r->sum += interval_hash(merged);
}

void resv_take(Reservations *r, int64_t start, int64_t len) {
  if (len > 0) take(r, start, len, NULL);
}

void resv_take_logged(Reservations *r, int64_t start, int64_t len, ResvJournal *j) {
  if (!j) {
    resv_take(r, start, len);
    return;
  }
  if (len <= 0) return;
  if (j->len == j->cap) {
    j->cap = j->cap ? 2 * j->cap : 64;
    j->e = xrealloc(j->e, (size_t)j->cap * sizeof *j->e);
  }
  take(r, start, len, &j->e[j->len++]);
}

// Puts back the intervals one take merged into interval `at`.
static void untake(const ResvUndo *u) {
  Reservations *r = u->r;
  r->sum -= interval_hash(IV(r, u->at));
  remove_at(r, u->at, 1);
  for (int k = 0; k < u->removed; k++) {
    r->sum += interval_hash(u->old[k]);
    insert_at(r, u->at + k, u->old[k]);
  }
}

void resv_undo_all(ResvJournal *j) {
  while (j->len) untake(&j->e[--j->len]);
}

int64_t resv_busy(const Reservations *r, int64_t from, int64_t to) {
  int64_t busy = 0;
  for (int i = first_ending_after(r, from); i < r->len && IV(r, i).start < to; i++)
    busy += MIN(to, IV(r, i).end) - MAX(from, IV(r, i).start);
  return busy;
}

void resv_free(Reservations *r) {
  free(r->iv);
  *r = (Reservations){0};
}
