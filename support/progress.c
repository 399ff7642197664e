// progress.c: a one-line progress display for long runs of tspc (pass by
// pass) and tsp-emu (simulated cycles against the prediction).  Part of
// support/: nothing here knows what is being measured.  The line appears
// only when its stream is a terminal and the run has lasted
// PROGRESS_AFTER_SECONDS, is redrawn at most every PROGRESS_REDRAW_SECONDS,
// and is erased when the run ends, so logs and pipes never see it.
#include "support.h"

#include <time.h>
#include <unistd.h>

static double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_init(Progress *p, FILE *out, const char *tool, bool quiet) {
  *p = (Progress){.out = out, .tool = tool, .now = monotonic_seconds};
  p->enabled = !quiet && out && isatty(fileno(out));
  p->start = p->now();
  p->drawn_at = -1;
}

void progress_update(Progress *p, const char *stage, double fraction) {
  if (!p->enabled) return;
  double t = p->now(), elapsed = t - p->start;
  if (elapsed < PROGRESS_AFTER_SECONDS) return;
  if (p->drawn_at >= 0 && t - p->drawn_at < PROGRESS_REDRAW_SECONDS) return;
  p->drawn_at = t;
  fraction = fraction < 0 ? 0 : fraction > 1 ? 1 : fraction;
  // \r returns to the line's start; \033[K erases what a longer line left
  fprintf(p->out, "\r%s: %s %3.0f%%, %.1f s\033[K", p->tool, stage, 100 * fraction, elapsed);
  fflush(p->out);
  p->shown = true;
}

void progress_done(Progress *p) {
  if (!p->shown) return;
  fprintf(p->out, "\r\033[K");
  fflush(p->out);
  p->shown = false;
}
