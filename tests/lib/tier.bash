# tests/lib/tier.bash - the lengths of the long campaigns, by test tier
#
# tests/run.sh's soak tier exports TEST_TIER=soak; the ci and quick tiers
# (and a bare meson test or bats run) leave it unset.  A campaign whose
# length is a count of rounds or seconds takes it from tier_len, so that
# ci runs a round of each scenario and soak runs them for long.

# tier_len CI SOAK: prints SOAK in the soak tier, CI otherwise.
tier_len()
{
	if [[ ${TEST_TIER:-} == soak ]]; then
		echo "$2"
	else
		echo "$1"
	fi
}
