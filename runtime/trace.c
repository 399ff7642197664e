// trace.c: the emulator's timeline as Chrome trace event JSON, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open (tsp-emu --trace).
//
// The runtime layer (runtime/emu.h): emu.c names a process per device and
// a thread per functional unit, then reports each instruction as a
// complete ("X") event and each vector crossing a link as a flow arrow
// from its SEND ("s") to its RECV ("f").  Events are written as they come
// through a large stdio buffer, so a long run never holds its trace in
// memory.  The file is one JSON object, one event per line:
//
//   {"traceEvents": [
//     {"name":"process_name","ph":"M","pid":0,"args":{"name":"dev0"}},
//     {"name":"VADD","ph":"X","pid":0,"tid":1,"ts":0.001000,"dur":0.004000}
//   ], "displayTimeUnit": "ns"}
//
// Times arrive in cycles and are written in microseconds (the format's
// unit), cycles / clock_mhz, with "%.6f": a picosecond grain, and the same
// text on every host.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

// The stdio buffer a trace writes through.
#define TRACE_BUFFER_BYTES ((size_t)1 << 20)

struct Trace {
  FILE *f;
  char *buffer;      // f's buffer, ours to free after fclose
  double clock_mhz;  // cycles per microsecond
  bool any_event;    // every event but the first follows a comma
};

Trace *trace_open(const char *path, double clock_mhz, char *err, size_t errlen) {
  if (!(clock_mhz > 0) || !isfinite(clock_mhz)) {
    snprintf(err, errlen, "%s: a trace needs a positive clock, not %g MHz", path, clock_mhz);
    return NULL;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    return NULL;
  }
  Trace *t = xcalloc(1, sizeof *t);
  t->f = f;
  t->buffer = xmalloc(TRACE_BUFFER_BYTES);
  setvbuf(f, t->buffer, _IOFBF, TRACE_BUFFER_BYTES);  // before any output, as it must be
  t->clock_mhz = clock_mhz;
  fputs("{\"traceEvents\": [", f);
  return t;
}

// ---- events ---------------------------------------------------------------------

// Starts an event's line: the comma after the previous event, if any.
static void begin_event(Trace *t) {
  fputs(t->any_event ? ",\n  " : "\n  ", t->f);
  t->any_event = true;
}

// A time in cycles, written in microseconds.
static void write_time(Trace *t, const char *key, int64_t cycles) {
  fprintf(t->f, ",\"%s\":%.6f", key, (double)cycles / t->clock_mhz);
}

// A metadata ("M") event naming a process (tid NULL) or a thread.
static void name_event(Trace *t, const char *what, int pid, const int *tid, const char *name) {
  begin_event(t);
  fprintf(t->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d", what, pid);
  if (tid) fprintf(t->f, ",\"tid\":%d", *tid);
  fputs(",\"args\":{\"name\":", t->f);
  str_print_json(t->f, name);
  fputs("}}", t->f);
}

void trace_name_process(Trace *t, int pid, const char *name) {
  name_event(t, "process_name", pid, NULL, name);
}

void trace_name_thread(Trace *t, int pid, int tid, const char *name) {
  name_event(t, "thread_name", pid, &tid, name);
}

void trace_slice(Trace *t, int pid, int tid, const char *name, int64_t start, int64_t dur) {
  begin_event(t);
  fputs("{\"name\":", t->f);
  str_print_json(t->f, name);
  fprintf(t->f, ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d", pid, tid);
  write_time(t, "ts", start);
  write_time(t, "dur", dur);
  fputc('}', t->f);
}

// One end of a flow arrow, `extra` the fields after "ph" (the binding
// point of the arriving end).
static void flow_end(Trace *t, const char *ph, const char *extra, uint64_t id, int pid, int tid,
                     int64_t at) {
  begin_event(t);
  fprintf(t->f,
          "{\"name\":\"vector\",\"cat\":\"link\",\"ph\":\"%s\"%s,\"id\":%" PRIu64
          ",\"pid\":%d,\"tid\":%d",
          ph, extra, id, pid, tid);
  write_time(t, "ts", at);
  fputc('}', t->f);
}

void trace_flow(Trace *t, uint64_t id, int pid0, int tid0, int64_t t0, int pid1, int tid1,
                int64_t t1) {
  // "s" leaves the slice enclosing t0 on (pid0, tid0); "f" with binding
  // point "e" arrives at the slice enclosing t1 on (pid1, tid1).
  flow_end(t, "s", "", id, pid0, tid0, t0);
  flow_end(t, "f", ",\"bp\":\"e\"", id, pid1, tid1, t1);
}

bool trace_close(Trace *t) {
  if (!t) return true;
  fputs("\n], \"displayTimeUnit\": \"ns\"}\n", t->f);
  bool ok = !ferror(t->f);
  if (fclose(t->f) != 0) ok = false;  // the final flush may be the write that fails
  free(t->buffer);
  free(t);
  return ok;
}
