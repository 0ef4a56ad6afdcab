#!/bin/sh
# loom.so exports only what Slurm looks up in a SPANK plugin (slurm/spank.h):
# the slurm_spank_* entry points and the SPANK_PLUGIN symbols. Its own
# functions (loom_*) stay inside, so they never clash with another plugin's
# or with the program that loads it.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
plugin=${LOOM_TEST_PLUGIN:-$LOOM_BUILD_DIR/spank/.libs/loom.so}
command -v nm >/dev/null || skip_all "nm (binutils) not installed"

nm -D --defined-only "$plugin" | awk 'NF >= 3 { print $3 }' | sort >"$TEST_TMP/exports"

test_expect_success 'the plugin has a dynamic symbol table' '
	cat "$TEST_TMP/exports" &&
	test -s "$TEST_TMP/exports"
'
test_expect_success 'nothing is exported but Slurm'"'"'s SPANK names' '
	! grep -Ev "^(slurm_spank_[a-z_]+|plugin_name|plugin_type|plugin_version|spank_plugin_version|spank_options)\$" \
		"$TEST_TMP/exports" >"$TEST_TMP/internal" || {
		echo "exported but internal:"; cat "$TEST_TMP/internal"; false; }
'
test_expect_success 'what Slurm looks up is exported' '
	for s in plugin_name plugin_type plugin_version spank_plugin_version \
		slurm_spank_init slurm_spank_init_post_opt slurm_spank_user_init \
		slurm_spank_task_init slurm_spank_task_post_fork slurm_spank_task_exit \
		slurm_spank_exit; do
		grep -qx "$s" "$TEST_TMP/exports" || { echo "not exported: $s"; false; }
	done
'
test_done
