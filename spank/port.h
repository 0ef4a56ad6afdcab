/* spank/port.h: MASTER_PORT from job and step id. */
#ifndef LOOM_SPANK_PORT_H
#define LOOM_SPANK_PORT_H

#include <stdint.h>

/* A port in [base, base + range), the same on every node of a step.
 * The job id is mixed so that jobs spread over the range; the step id is
 * added, so that up to RANGE steps of one job get distinct ports. */
int loom_master_port(uint32_t job_id, uint32_t step_id, int base, int range);

#endif
