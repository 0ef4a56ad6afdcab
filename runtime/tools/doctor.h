/* runtime/tools/doctor.h: the parts of loom-doctor (loom_doctor.c): its
 * JSON document (doctor_json.c, the only JSON writer of the runtime, so
 * libloom itself needs no JSON library) and the collection of a running
 * job's records (doctor_job.c asks each node with srun for its records,
 * doctor_dump.c is what runs there). */
#ifndef LOOM_TOOLS_DOCTOR_H
#define LOOM_TOOLS_DOCTOR_H

#include "flight/flight.h"

/* ---- --json: one object {"errors": [...], "report": {...}} ---- */
struct doctor_json;
struct doctor_json *doctor_json_new(void);
/* a file skipped (or a limit said), in "errors" */
void doctor_json_error(struct doctor_json *j, const char *msg);
/* the analysis as "report"; returns what loom_flight_analyse returns */
int doctor_json_report(struct doctor_json *j, struct loom_flight_rec *recs, int n, double now);
/* --slow: the lateness analysis as "slow"; returns what
 * loom_flight_slow_analyse returns */
int doctor_json_slow(struct doctor_json *j, struct loom_flight_rec *recs, int n, uint64_t last,
		     uint64_t until);
/* the document on one line into f, then freed */
int doctor_json_print(struct doctor_json *j, FILE *f);
void doctor_json_free(struct doctor_json *j);

/* ---- --job: the records of a running job ---- */
/* The stream each node sends (loom-doctor --dump under srun -l, which
 * prefixes every line with the task's number: srun merges the tasks'
 * output at line boundaries only, so the frames are lines):
 *   F NAME SIZE   a record of SIZE bytes follows, NAME its file name
 *   D HEX         its next bytes (at most DOCTOR_LINE_BYTES)
 *   Z COUNT       its next COUNT bytes are zero (an empty ring costs a line)
 *   B MESSAGE     a file the node skipped, and why
 *   S NF NB       files the node left out by its file and its byte limit
 *   E             the node is done
 * A record is sent as the reader keeps it (loom_flight_read: the slots
 * in use, the newest LOOM_FLIGHT_KEEP_OPS operations of each), rewritten
 * as a record file of that many operations, so none is larger than
 * DOCTOR_REC_MAX whatever the node's file says; the receiver checks it
 * again as any record file. */
#define DOCTOR_LINE_BYTES 64
#define DOCTOR_REC_MAX (sizeof(struct loom_flight_hdr) + \
	(size_t)LOOM_FLIGHT_SLOTS * (sizeof(struct loom_flight_slot) + \
	(size_t)LOOM_FLIGHT_KEEP_OPS * sizeof(struct loom_flight_op)))
/* The node's side: its LOOM_FLIGHT_DIR on stdout, within the limits.
 * Exit status: 0, or 1 when there is no directory to read. */
int doctor_dump(const struct loom_flight_budget *limits);
/* The caller's side: the records of job from every node of it, into a
 * new private directory (its path into dir), within budget (what the
 * limits leave out is counted there); files the nodes skipped go to bad.
 * 0 (a failed copy is said, and what came is read), or -1 for a job id
 * that is none or no directory to copy to. */
int doctor_collect(const char *job, struct loom_flight_budget *budget, char *dir, size_t len,
		   void (*bad)(const char *msg, void *arg), void *arg);
/* remove that directory and what is in it */
void doctor_collect_done(const char *dir);

#endif
