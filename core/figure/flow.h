/*
** flow.h — the lineage behind tt.flow (figure layer): flow.c subscribes to
** the trace and keeps the recent events and the labels given to tensors.
** Drawing them is tt_flow_write (figure.h).
*/
#ifndef TT_FLOW_H
#define TT_FLOW_H

#include "tt.h"

/* Subscribes the recorder to the trace (a second call changes nothing):
   from then on every event is kept. TT_EARG when the trace has no room. */
tt_status tt_flow_start(void);
/* Keeps one event (what the subscription calls; tests feed made-up ones). */
void tt_flow_record(const tt_event *ev);
/* Starts a new section: tt_flow_write draws the events since. Labels stay. */
void tt_flow_reset(void);
/* Names tensor id in the diagram (labels may come after the events). */
void tt_flow_set_label(uint64_t id, const char *label);

#endif
