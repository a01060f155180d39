// The hidden subcommand `commbench __conformance_rank`: one rank of a conformance run, started by
// `commbench conformance` (conformance/driver.h) as a worker is started by the agent.
#pragma once

namespace commbench {

int conformance_rank_main(int argc, char** argv);

}  // namespace commbench
