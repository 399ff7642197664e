// link.c: ports, links and receive buffers.  Part of runtime/; emu.c calls
// in when a unit issues SEND, RECV, TRANSMIT or POLL and when their streams
// step.  Seed 002 s2.3 and s4.4: no arbitration, no back-pressure, only
// very shallow buffers, so the emulator checks every slot:
//
//   - a SEND (or TRANSMIT) may not start while its port is still sending,
//     nor a RECV while its port is still receiving (port-busy);
//   - vector k of a SEND leaves at start + k * every cycles and arrives a
//     link latency later (max latency with jitter off, else seeded in
//     [min, max], never overtaking the vector before it);
//   - take k of a RECV, at start + k * every, needs a vector that has
//     arrived (underflow), and no vector may arrive while rx_buffer_vectors
//     others wait (overflow);
//   - POLL looks for a notification at each HAC epoch boundary;
//   - with faults (fault.c), a vector on the wire may get bit errors (the
//     FEC corrects or detects them) or be lost in a cable that died; a
//     take that finds nothing on a dead cable is not an underflow, since
//     fault.c reports the cable itself.
//
// The run goes in windows (window.c): a vector put on a link joins the
// peer's receive FIFO at the window's end, through link_apply in event-key
// order, as do the takes that found the FIFO empty; nothing sent in a
// window can arrive before it ends, so no take can tell.
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>

// ---- payloads: vector-sized blocks, recycled ------------------------------------------

static uint8_t *payload_new(Emu *e) {
  PayloadBlock *b = e->free_payloads;
  if (b) {
    e->free_payloads = b->next;
    return (uint8_t *)b;
  }
  return xmalloc((size_t)MAX(e->vector_bytes, (int)sizeof(PayloadBlock)));
}

static void payload_free(Emu *e, uint8_t *p) {
  if (!p) return;
  PayloadBlock *b = (PayloadBlock *)(void *)p;
  b->next = e->free_payloads;
  e->free_payloads = b;
}

uint8_t *link_payload_new(Emu *e) { return payload_new(e); }

void link_payload_free(Emu *e, uint8_t *p) { payload_free(e, p); }

// ---- the receive FIFO ---------------------------------------------------------------------

// The ring's capacity is a power of two, so positions wrap with a mask.
static RxEntry *rx_at(RxQueue *q, size_t i) { return &q->e[(q->head + i) & (q->cap - 1)]; }

static void rx_push(RxQueue *q, RxEntry entry) {
  if (q->len == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 16;
    RxEntry *e = xmalloc(cap * sizeof *e);
    for (size_t i = 0; i < q->len; i++) e[i] = *rx_at(q, i);
    free(q->e);
    q->e = e;
    q->cap = cap;
    q->head = 0;
  }
  *rx_at(q, q->len++) = entry;
}

static RxEntry rx_pop(RxQueue *q) {
  RxEntry entry = *rx_at(q, 0);
  q->head = (q->head + 1) & (q->cap - 1);
  q->len--;
  q->taken++;
  return entry;
}

// Puts a vector (read from SRAM vector addr; a notification: payload NULL)
// on the link leaving (d, port) at local cycle `local`.  Its arrival is
// drawn now; it joins the peer's receive FIFO at the window's end
// (link_apply), at least a link latency before it can arrive.
static void depart(Emu *e, EDev *d, int unit, int port, int64_t local, uint32_t addr, uint8_t *payload) {
  EPort *out = &d->ports[port];
  out->sent++;  // it holds the link, whatever becomes of it
  Tick now = emu_global_at(d, local);
  int64_t latency = out->latency_max;
  if (e->opt.jitter)
    latency = out->latency_min + (int64_t)(emu_rng(&out->rng) % (uint64_t)(out->latency_max - out->latency_min + 1));
  Tick arrives = MAX(now + latency * EMU_TICKS_PER_CYCLE, out->last_arrival);
  out->last_arrival = arrives;
  NetOp *op = window_net_op(e, NET_DEPART);
  op->dev = d->id, op->port = port, op->unit = unit;
  op->at = now, op->arrives = arrives, op->addr = addr, op->payload = payload;
}

// A departure at the window's end, as it would have been at its own key:
// through the wire's faults, then into the peer's FIFO.
// The payload's block goes back to the sender's partition, or the
// receiver's partition (which frees it after the take) hands the sender one
// of its free blocks: each partition's pool stays as large as what it sends.
static void return_block(Emu *m, const NetOp *op, bool dropped) {
  int sender = m->part_of[op->dev];
  // From another rank: its bytes came in a block of this rank's pool
  // (window.c, receive_from), which the take frees back into it.
  Emu *from = m->nranks > 1 && sender != m->rank ? m->parts[m->rank] : m->parts[sender];
  if (dropped) {
    payload_free(from, op->payload);
    return;
  }
  Emu *to = m->parts[m->part_of[m->devs[op->dev].ports[op->port].peer_dev]];
  if (to == from || !to->free_payloads) return;
  PayloadBlock *b = to->free_payloads;
  to->free_payloads = b->next;
  b->next = from->free_payloads;
  from->free_payloads = b;
}

static void apply_depart(Emu *m, const NetOp *op) {
  EDev *d = &m->devs[op->dev];
  EPort *out = &d->ports[op->port];
  RxQueue *q = &m->devs[out->peer_dev].ports[out->peer_port].rx;
  if (m->opt.faults && !fault_on_wire(m, d, op->port, op->at, op->arrives, op->addr, op->payload)) {  // a dead cable
    q->appended++;
    return_block(m, op, true);
    return;
  }
  if (q->appended++ < q->taken) {  // its take slot has passed: reported as an underflow
    return_block(m, op, true);
    return;
  }
  if (q->len >= EMU_MAX_QUEUED_VECTORS) {  // nothing takes them: bound the memory, stop
    emu_violate(m, VIOL_OVERFLOW, out->peer_dev, NULL, out->peer_port, -1,
                "port %d holds %d vectors nothing takes; the run is stopped", out->peer_port,
                EMU_MAX_QUEUED_VECTORS);
    payload_free(m, op->payload);
    m->stop = true;
    return;
  }
  if (op->payload) return_block(m, op, false);
  rx_push(q, (RxEntry){.departed = op->at, .arrives = op->arrives, .payload = op->payload, .from_dev = d->id,
                       .from_unit = op->unit});
}

// A take that found its FIFO empty, at the window's end: a vector that left
// for it earlier in the window (it cannot have arrived yet) was its
// vector, late; else none was sent, or a dead cable lost it (fault.c names
// the cable).
static void apply_take(Emu *m, const NetOp *op) {
  EDev *d = &m->devs[op->dev];
  EPort *p = &d->ports[op->port];
  const EUnit *u = &d->units[op->unit];
  if (p->rx.len > 0) {
    emu_violate(m, VIOL_UNDERFLOW, d->id, u, op->port, op->local,
                "RECV wants a vector on port %d at cycle %lld; it arrives at cycle %lld", op->port,
                (long long)op->local, (long long)emu_local_at_or_after(d, rx_at(&p->rx, 0)->arrives));
    payload_free(m, rx_pop(&p->rx).payload);  // the late vector was meant for this slot: drop it
    return;
  }
  if (op->at < p->dies_at)
    emu_violate(m, VIOL_UNDERFLOW, d->id, u, op->port, op->local,
                "RECV wants a vector on port %d at cycle %lld; none has been sent", op->port, (long long)op->local);
  p->rx.taken++;
}

void link_apply(Emu *m, const NetOp *op) {
  m->cur = op->k;
  m->cur.sub++;
  if (op->kind == NET_DEPART)
    apply_depart(m, op);
  else
    apply_take(m, op);
}

// ---- issuing ----------------------------------------------------------------------------

static bool port_usable(Emu *e, EDev *d, int unit, int port, int64_t local, const char *what) {
  EPort *p = &d->ports[port];
  if (p->link >= 0 && !p->failed) return true;
  emu_violate(e, VIOL_DEAD_LINK, d->id, &d->units[unit], port, local,
              "%s on port %d, whose link %s", what, port, p->link < 0 ? "is unplugged" : "has failed");
  return false;
}

static void check_tx_free(Emu *e, EDev *d, int unit, int port, int64_t local, int64_t busy_for) {
  EPort *p = &d->ports[port];
  if (local < p->tx_busy_until)
    emu_violate(e, VIOL_PORT_BUSY, d->id, &d->units[unit], port, local,
                "starts sending on port %d while it is sending until cycle %lld", port,
                (long long)p->tx_busy_until);
  p->tx_busy_until = MAX(p->tx_busy_until, local + busy_for);
}

// The span a stream keeps its port busy, as a slice on the port's track.
static void trace_stream(Emu *e, const EDev *d, int unit, int which, const char *name, int64_t local, int64_t cycles) {
  emu_trace_span(e, d, emu_trace_track(unit, which), name, local, cycles);
}

void link_send(Emu *e, EDev *d, int unit, const Instr *in, int64_t local) {
  if (!port_usable(e, d, unit, in->port, local, "SEND")) return;
  EPort *p = &d->ports[in->port];
  check_tx_free(e, d, unit, in->port, local, (int64_t)in->b * p->every);
  trace_stream(e, d, unit, 1, "SEND", local, (int64_t)in->b * p->every);
  p->sending++;
  window_sending_changed(e, d, in->port);
  emu_push(e, emu_global_at(d, local), EV_SEND, d->id, unit, emu_stream_new(in, d->id, unit, local, in->b, p->every));
}

void link_transmit(Emu *e, EDev *d, int unit, const Instr *in, int64_t local) {
  if (!port_usable(e, d, unit, in->port, local, "TRANSMIT")) return;
  check_tx_free(e, d, unit, in->port, local, d->ports[in->port].every);
  trace_stream(e, d, unit, 1, "TRANSMIT", local, d->ports[in->port].every);
  depart(e, d, unit, in->port, local, UINT32_MAX, NULL);
}

void link_recv(Emu *e, EDev *d, int unit, const Instr *in, int64_t local) {
  EPort *p = &d->ports[in->port];
  if (p->link < 0 || p->failed) {
    emu_violate(e, VIOL_DEAD_LINK, d->id, &d->units[unit], in->port, local,
                "RECV on port %d, whose link %s", in->port, p->link < 0 ? "is unplugged" : "has failed");
    return;
  }
  if (local < p->rx_busy_until)
    emu_violate(e, VIOL_PORT_BUSY, d->id, &d->units[unit], in->port, local,
                "starts receiving on port %d while it is receiving until cycle %lld", in->port,
                (long long)p->rx_busy_until);
  p->rx_busy_until = MAX(p->rx_busy_until, local + (int64_t)in->b * p->every);
  trace_stream(e, d, unit, 2, "RECV", local, (int64_t)in->b * p->every);
  emu_push(e, emu_global_at(d, local), EV_RECV, d->id, unit, emu_stream_new(in, d->id, unit, local, in->b, p->every));
}

// ---- stepping streams --------------------------------------------------------------------

// Vector s->k of a SEND: read, copied, on the wire.
static void send_element(Emu *e, EDev *d, Stream *s) {
  int64_t local = s->start + (int64_t)s->k * s->every;
  const uint8_t *src = emu_sram_read_at(e, d, &d->units[s->unit], &s->cur[CUR_A], s->in.a + s->k, local);
  uint8_t *payload = payload_new(e);
  memcpy(payload, src, (size_t)e->vector_bytes);
  // The stream reads the next vector `every` cycles from now: start fetching
  // it, so that the copy does not wait on memory (streams are long).
  if (s->k + 1 < s->n) sram_prefetch(&d->sram, &s->cur[CUR_B], s->in.a + s->k + 1);
  depart(e, d, s->unit, s->in.port, local, s->in.a + s->k, payload);
}

// s's next element, then as many more as burst.c allows; whether elements
// remain (for a later event).
static bool run_elements(Emu *e, EDev *d, Stream *s, void (*element)(Emu *, EDev *, Stream *)) {
  Burst b;
  b.planned = false;
  do element(e, d, s);
  while (++s->k < s->n && burst_next(e, s, &b));
  return s->k < s->n;
}

// Its elements, as many at once as burst.c allows.
void link_step_send(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  if (run_elements(e, d, s, send_element)) {
    emu_push(e, emu_global_at(d, s->start + (int64_t)s->k * s->every), EV_SEND, s->dev, s->unit, s);
  } else {
    d->ports[s->in.port].sending--;
    window_sending_changed(e, d, s->in.port);
    emu_stream_end(e, s);
  }
}

// Overflow: a vector arrived while rx_buffer_vectors others were waiting,
// i.e. the one rx_buffer_vectors places behind the head arrived before now.
static void check_overflow(Emu *e, EDev *d, const EUnit *u, int port, int64_t local) {
  EPort *p = &d->ports[port];
  size_t depth = (size_t)e->topo->rx_buffer_vectors;
  Tick now = emu_global_at(d, local);
  if (p->overflow_reported || p->rx.len <= depth || rx_at(&p->rx, depth)->arrives >= now) return;
  p->overflow_reported = true;
  Tick at = rx_at(&p->rx, depth)->arrives;
  char when[64];
  if (at < d->start)
    snprintf(when, sizeof when, "before the device started");
  else
    snprintf(when, sizeof when, "at cycle %lld", (long long)emu_local_at_or_after(d, at));
  emu_violate(e, VIOL_OVERFLOW, d->id, u, port, local,
              "port %d's receive buffer (%zu vectors) overflowed %s: vectors arrive faster than "
              "RECV takes them",
              port, depth, when);
}

static void trace_vector(Emu *e, const RxEntry *v, int dev, int unit, Tick now) {
  e->flows++;
  if (!e->opt.trace_path) return;
  window_trace_flow(e, v->from_dev, emu_trace_track(v->from_unit, 1), emu_trace_cycle(v->departed), dev,
                    emu_trace_track(unit, 2), emu_trace_cycle(now));
}

// Take s->k of a RECV.
static void recv_element(Emu *e, EDev *d, Stream *s) {
  EUnit *u = &d->units[s->unit];
  EPort *p = &d->ports[s->in.port];
  int64_t local = s->start + (int64_t)s->k * s->every;
  Tick now = emu_global_at(d, local);
  check_overflow(e, d, u, s->in.port, local);
  if (p->rx.len > 0 && rx_at(&p->rx, 0)->arrives <= now) {
    RxEntry v = rx_pop(&p->rx);
    if (!v.payload) {
      emu_violate(e, VIOL_UNDERFLOW, d->id, u, s->in.port, local,
                  "RECV on port %d took a notification (TRANSMIT), not data", s->in.port);
    } else {
      // past the cache: the vector is read again only much later (sram_stream_vector)
      sram_stream_vector(emu_sram_write_at(e, d, u, &s->cur[CUR_A], s->in.a + s->k, local, now), v.payload,
                         e->vector_bytes);
      payload_free(e, v.payload);
      e->r->vectors_moved++;
      trace_vector(e, &v, d->id, s->unit, now);
    }
  } else if (p->rx.len > 0) {
    emu_violate(e, VIOL_UNDERFLOW, d->id, u, s->in.port, local,
                "RECV wants a vector on port %d at cycle %lld; it arrives at cycle %lld", s->in.port,
                (long long)local, (long long)emu_local_at_or_after(d, rx_at(&p->rx, 0)->arrives));
    payload_free(e, rx_pop(&p->rx).payload);  // the late vector was meant for this slot: drop it
  } else {  // what finds an empty FIFO depends on the window's other departures: apply_take
    NetOp *op = window_net_op(e, NET_TAKE);
    op->dev = d->id, op->port = s->in.port, op->unit = s->unit, op->at = now, op->local = local;
  }
}

void link_step_recv(Emu *e, Stream *s) {
  EDev *d = &e->devs[s->dev];
  if (run_elements(e, d, s, recv_element))
    emu_push(e, emu_global_at(d, s->start + (int64_t)s->k * s->every), EV_RECV, s->dev, s->unit, s);
  else
    emu_stream_end(e, s);
}

// ---- POLL: a notification at an epoch boundary? -------------------------------------------

static Tick next_boundary_after(const Emu *e, Tick g) {
  Tick E = (Tick)e->topo->epoch_cycles * EMU_TICKS_PER_CYCLE;
  return (g / E + 1) * E;
}

void link_poll(Emu *e, EDev *d, int unit, int port, int64_t local) {
  d->units[unit].poll_port = port;
  EPort *p = &d->ports[port];
  if (p->link < 0 || p->failed)  // nothing can ever arrive: also a hang, found below
    emu_violate(e, VIOL_DEAD_LINK, d->id, &d->units[unit], port, local, "POLL on port %d, whose link %s",
                port, p->link < 0 ? "is unplugged" : "has failed");
  emu_push(e, next_boundary_after(e, emu_global_at(d, local)), EV_POLL, d->id, unit, NULL);
}

void link_report_polling(Emu *e, Tick now) {
  for (int i = 0; i < e->ndevs; i++)
    for (int u = 0; u < e->devs[i].nunits && now < e->devs[i].dies_at && emu_owns(e, i); u++) {
      EUnit *unit = &e->devs[i].units[u];
      if (unit->state == UNIT_POLLING)
        emu_violate(e, VIOL_HANG, i, unit, unit->poll_port, unit->wait_start,
                    "POLL on port %d waits for a notification that never comes", unit->poll_port);
    }
}

// At an epoch boundary: a notification that has arrived lets the unit go on
// at this boundary; anything else waits for the next one.  If only polls are
// left and no notification is on its way, nothing can ever wake them.
static bool holds_notification(RxQueue *q) {
  for (size_t i = 0; i < q->len; i++)
    if (!rx_at(q, i)->payload) return true;
  return false;
}

// Only polls are left to run: they can still end if some polling unit has a
// notification on its way to (or waiting at) the port it polls (on a device
// still alive: a dead one's units never poll again).
bool link_polls_can_progress(Emu *e, Tick now) {
  for (int i = 0; i < e->ndevs; i++)
    for (int u = 0; u < e->devs[i].nunits && now < e->devs[i].dies_at && emu_owns(e, i); u++) {
      EUnit *unit = &e->devs[i].units[u];
      if (unit->state == UNIT_POLLING && holds_notification(&e->devs[i].ports[unit->poll_port].rx)) return true;
    }
  return false;
}

void link_step_poll(Emu *e, EDev *d, int unit, Tick boundary) {
  EUnit *u = &d->units[unit];
  EPort *p = &d->ports[u->poll_port];
  int64_t local = emu_local_at_or_after(d, boundary);
  while (p->rx.len > 0 && rx_at(&p->rx, 0)->arrives <= boundary) {
    RxEntry v = rx_pop(&p->rx);
    if (!v.payload) {
      if (e->opt.trace_path) {
        trace_vector(e, &v, d->id, unit, boundary);
        int64_t start = emu_trace_cycle(emu_global_at(d, u->wait_start));
        window_trace_slice(e, d->id, unit, "POLL", start, MAX(emu_trace_cycle(emu_global_at(d, local)) - start, 1));
      }
      emu_resume(e, d, unit, local);
      return;
    }
    emu_violate(e, VIOL_UNDERFLOW, d->id, u, u->poll_port, local,
                "POLL on port %d found data, not a notification", u->poll_port);
    payload_free(e, v.payload);
  }
  if (window_only_polls_left(e) && !link_polls_can_progress(e, boundary) && !e->main->others_can_progress) {
    window_poll_hang(e, boundary);
    return;
  }
  emu_push(e, next_boundary_after(e, boundary), EV_POLL, d->id, unit, NULL);
}

void link_free(Emu *e) {
  for (int i = 0; i < e->ndevs; i++)
    for (int p = 0; p < e->devs[i].nports; p++) {
      RxQueue *q = &e->devs[i].ports[p].rx;
      while (q->len > 0) payload_free(e, rx_pop(q).payload);
      free(q->e);
    }
  link_free_payloads(e);
}

void link_free_payloads(Emu *e) {
  while (e->free_payloads) {
    PayloadBlock *b = e->free_payloads;
    e->free_payloads = b->next;
    free(b);
  }
}
