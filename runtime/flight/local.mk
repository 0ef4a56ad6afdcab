# runtime/flight/: the flight recorder (LOOM_FLIGHT_DIR): each rank's
# record file, its reader and the hang verdict (loom-doctor, timeout lines)
runtime_libloom_core_la_SOURCES += runtime/flight/flight.h runtime/flight/flight_rec.c \
	runtime/flight/flight_read.c runtime/flight/flight_verdict.c
# lateness: which rank made the others wait (loom-doctor --slow)
runtime_libloom_core_la_SOURCES += runtime/flight/flight_slow.h runtime/flight/flight_slow.c \
	runtime/flight/flight_slow_report.c
# loom-doctor: reads the records (internals: links the convenience library)
bin_PROGRAMS += runtime/tools/loom-doctor
runtime_tools_loom_doctor_SOURCES = runtime/tools/loom_doctor.c runtime/tools/doctor.h \
	runtime/tools/doctor_json.c runtime/tools/doctor_job.c runtime/tools/doctor_dump.c
runtime_tools_loom_doctor_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
runtime_tools_loom_doctor_LDADD = runtime/libloom_core.la $(JANSSON_LIBS)

# cluster tests: hangs the doctor must name
check_PROGRAMS += t/runtime/flight-hang
t_runtime_flight_hang_SOURCES = t/runtime/flight-hang.c
t_runtime_flight_hang_LDADD = runtime/libloom.la
dist_check_SCRIPTS += t/t2100-flight.t t/t2101-flight-corrupt.t t/t2102-flight-plugin.t \
	t/t6002-flight-mpi.t
# cluster test: a straggler loom-doctor --slow must name
check_PROGRAMS += t/runtime/flight-slow
t_runtime_flight_slow_SOURCES = t/runtime/flight-slow.c
t_runtime_flight_slow_LDADD = runtime/libloom.la
dist_check_SCRIPTS += t/t2103-flight-slow.t
# unit test: writer and reader on one record, and the cost per operation
check_PROGRAMS += runtime/flight/test/flight
runtime_flight_test_flight_SOURCES = runtime/flight/test/flight.c
runtime_flight_test_flight_LDADD = runtime/libloom_core.la
TESTS += runtime/flight/test/flight
# unit test: the lateness analysis on synthetic records
check_PROGRAMS += runtime/flight/test/slow
runtime_flight_test_slow_SOURCES = runtime/flight/test/slow.c
runtime_flight_test_slow_LDADD = runtime/libloom_core.la
TESTS += runtime/flight/test/slow
# fuzz test: mutated records through the reader and both analyses (t/t7113)
check_PROGRAMS += runtime/flight/test/flight_fuzz
runtime_flight_test_flight_fuzz_SOURCES = runtime/flight/test/flight_fuzz.c
runtime_flight_test_flight_fuzz_LDADD = runtime/libloom_core.la
