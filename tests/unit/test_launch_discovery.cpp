// Rank discovery: each launcher's variables, the order they are tried in, the Slurm node list,
// and the refusals (incomplete or foreign launcher environments) that prevent N independent
// one-rank jobs.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <tuple>
#include <vector>

#include "launch/rank_discovery.h"

namespace commbench {
namespace {

TEST(LaunchDiscovery, NothingSetIsLocal) {
  const LaunchContext c = discover_launch({{"HOME", "/root"}});
  EXPECT_EQ(c.launcher, "local");
  EXPECT_EQ(c.agent_count, 1);
  EXPECT_EQ(c.rendezvous, Rendezvous::kLocal);
}

TEST(LaunchDiscovery, TorchrunVariables) {
  const LaunchContext c = discover_launch({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                           {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "node7"},
                                           {"MASTER_PORT", "29500"}});
  EXPECT_EQ(c.launcher, "torchrun");
  EXPECT_EQ(c.agent_rank, 3);
  EXPECT_EQ(c.agent_count, 8);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.local_count, 2);
  EXPECT_FALSE(c.single_host());
  EXPECT_EQ(c.rendezvous, Rendezvous::kEnv);
  EXPECT_EQ(c.master_addr, "node7");
  EXPECT_EQ(c.master_port, 29500);
  EXPECT_NE(describe_launch(c).find("store         node7:29500"), std::string::npos) << describe_launch(c);
}

// Real torchrun (static rendezvous) keeps its own agent's TCPStore on MASTER_ADDR:MASTER_PORT for
// the whole job: rank 0 could not bind it ("Address already in use") and the others waited 2 min.
TEST(LaunchDiscovery, TorchrunsAgentStoreSendsRankZeroToAPortOfItsOwnThroughAFile) {
  EnvMap env{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
             {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
             {"TORCHELASTIC_RUN_ID", "exp42"}};
  LaunchContext c = discover_launch(env);
  EXPECT_EQ(c.launcher, "torchrun");
  EXPECT_EQ(c.rendezvous, Rendezvous::kFile);
  EXPECT_EQ(c.file_store_host, "node7");
  EXPECT_EQ(c.job_id, "torchrun-exp42-29500");
  env.erase("TORCHELASTIC_RUN_ID");  // torchrun's default run id is "none"
  EXPECT_EQ(discover_launch(env).job_id, "torchrun-none-29500");
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";  // c10d rendezvous, or a worker that asked not to
  c = discover_launch(env);
  EXPECT_EQ(c.rendezvous, Rendezvous::kEnv);
  EXPECT_TRUE(c.file_store_host.empty());
}

TEST(LaunchDiscovery, TorchrunWithoutMasterIsRefused) {
  try {
    discover_launch({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
    FAIL() << "accepted";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR is not"), std::string::npos) << e.what();
  }
}

// RANK/WORLD_SIZE/MASTER_ADDR alone do not say whether the job spans hosts: treating it as one
// host once left a token-less store listening on MASTER_ADDR (issue 17). Refused, naming what to set.
TEST(LaunchDiscovery, TorchrunWithoutTheLocalLayoutIsRefusedNamingTheVariable) {
  try {
    discover_launch({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}});
    FAIL() << "accepted";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("LOCAL_WORLD_SIZE is not"), std::string::npos) << e.what();
  }
  try {
    discover_launch({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"},
                     {"MASTER_PORT", "1"}});
    FAIL() << "accepted";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("LOCAL_RANK is not set"), std::string::npos) << e.what();
  }
  // One rank needs no layout; all ranks on one host need no LOCAL_RANK (it is RANK).
  EXPECT_TRUE(discover_launch({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}).single_host());
  EXPECT_EQ(discover_launch({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"},
                             {"MASTER_PORT", "1"}}).local_rank, 1);
}

TEST(LaunchDiscovery, PmiWithoutTheLocalLayoutIsRefused) {
  try {
    discover_launch({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MASTER_ADDR", "h0"}, {"MASTER_PORT", "4000"}});
    FAIL() << "accepted";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("MPI_LOCALNRANKS"), std::string::npos) << e.what();
  }
}

TEST(LaunchDiscovery, SlurmOnSeveralNodesWithoutTasksPerNodeSpansHosts) {
  const LaunchContext c = discover_launch({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"},
                                           {"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_STEP_NODELIST", "n[1-2]"},
                                           {"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}});
  EXPECT_FALSE(c.single_host()) << "two nodes: the store must not be treated as one host's";
  EXPECT_EQ(c.local_count, 1);
}

TEST(LaunchDiscovery, BadNumbersNameTheVariable) {
  try {
    discover_launch({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}});
    FAIL();
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 4 is not below the world size 4"), std::string::npos) << e.what();
  }
  try {
    discover_launch({{"RANK", "x"}, {"WORLD_SIZE", "4"}});
    FAIL();
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("RANK=x is not valid"), std::string::npos) << e.what();
  }
}

TEST(LaunchDiscovery, SlurmUsesTheNodeListAndAPortFromTheJobId) {
  const LaunchContext c = discover_launch({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                                           {"SLURM_STEP_NUM_NODES", "4"}, {"SLURM_NTASKS_PER_NODE", "2"},
                                           {"SLURM_STEP_NODELIST", "gpu[07-10]"}, {"SLURM_JOB_ID", "1234"},
                                           {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(c.launcher, "slurm");
  EXPECT_EQ(c.agent_rank, 5);
  EXPECT_EQ(c.local_count, 2);
  EXPECT_EQ(c.master_addr, "gpu07");
  EXPECT_EQ(c.master_port, 20000 + (1234 * 31) % 20000);
  EXPECT_EQ(c.job_id, "1234.0");
}

// MASTER_ADDR=[fd00::1], as URLs write IPv6 addresses, was resolved with its brackets and failed.
TEST(LaunchDiscovery, ABracketedIpv6MasterAddressIsTheAddressInside) {
  const LaunchContext c = discover_launch({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                                           {"LOCAL_WORLD_SIZE", "1"}, {"MASTER_ADDR", "[fd00:213::1]"},
                                           {"MASTER_PORT", "29500"}});
  EXPECT_EQ(c.master_addr, "fd00:213::1");
}

// A probe: srun --ntasks=3 on 2 nodes (2 + 1) without --ntasks-per-node gave the second node's
// task "local rank 0 of 2": SLURM_STEP_TASKS_PER_NODE, which srun always sets, was not read.
TEST(LaunchDiscovery, SlurmReadsEachNodesTaskCountFromTheStepsList) {
  const EnvMap base{{"SLURM_NTASKS", "7"}, {"SLURM_LOCALID", "0"}, {"SLURM_STEP_NUM_NODES", "4"},
                    {"SLURM_STEP_NODELIST", "node[03-06]"}, {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "1"},
                    {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}};
  for (const auto& [node, procid, count] : std::vector<std::tuple<std::string, std::string, int>>{
           {"0", "0", 2}, {"2", "4", 2}, {"3", "6", 1}}) {
    EnvMap env = base;
    env["SLURM_NODEID"] = node;
    env["SLURM_PROCID"] = procid;
    EXPECT_EQ(discover_launch(env).local_count, count) << "node " << node;
  }
  EnvMap bad = base;
  bad["SLURM_NODEID"] = "1";
  bad["SLURM_PROCID"] = "2";
  for (const char* list : {"2(x3,1", "0,1", "2,,1", "2,", "x"}) {
    bad["SLURM_STEP_TASKS_PER_NODE"] = list;
    try {
      discover_launch(bad);
      ADD_FAILURE() << list << " was accepted";
    } catch (const LaunchError& e) {
      EXPECT_NE(std::string(e.what()).find("is not Slurm's tasks-per-node list"), std::string::npos) << e.what();
    }
  }
  bad["SLURM_STEP_TASKS_PER_NODE"] = "2,1";  // 2 nodes listed, the step has 4
  EXPECT_THROW(discover_launch(bad), LaunchError);
  bad["SLURM_STEP_TASKS_PER_NODE"] = "2,2,2,1";
  bad["SLURM_NODEID"] = "4";  // beyond the step's 4 nodes
  EXPECT_THROW(discover_launch(bad), LaunchError);
  // The allocation's SLURM_NTASKS_PER_NODE (sbatch --ntasks-per-node=2), inherited by the step,
  // does not override the step's own layout.
  EnvMap inherited = base;
  inherited["SLURM_NODEID"] = "3";
  inherited["SLURM_PROCID"] = "6";
  inherited["SLURM_NTASKS_PER_NODE"] = "2";
  EXPECT_EQ(discover_launch(inherited).local_count, 1);
  // Without either variable the even share is assumed, and the sources say so.
  EnvMap none = base;
  none.erase("SLURM_STEP_TASKS_PER_NODE");
  none["SLURM_PROCID"] = "0";
  const LaunchContext guessed = discover_launch(none);
  EXPECT_EQ(guessed.local_count, 2);
  EXPECT_NE(fmt::format("{}", fmt::join(guessed.sources, "; ")).find("assumed (an even share)"), std::string::npos);
}

// Slurm ids that are not Slurm's numbers were an uncaught std::stoul exception (abort, exit 134);
// a missing job id gave every such job port 20000.
TEST(LaunchDiscovery, SlurmIdsMustBeSlurmsNumbers) {
  const EnvMap base{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_LOCALID", "0"},
                    {"SLURM_STEP_NODELIST", "node03"}, {"SLURM_NNODES", "1"}, {"SLURM_STEP_ID", "0"}};
  for (const auto& [name, value, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"SLURM_STEP_ID", "batch", "SLURM_STEP_ID=batch is not valid"},
           {"SLURM_JOB_ID", "abc", "SLURM_JOB_ID=abc is not valid"},
           {"SLURM_JOB_ID", "123456789012345678901234", "is not valid"},
           {"SLURM_STEP_ID", "-1", "SLURM_STEP_ID=-1 is not valid"},
           {"SLURM_JOB_ID", "", "Slurm task without SLURM_JOB_ID"}}) {
    EnvMap env = base;
    env["SLURM_JOB_ID"] = "77";
    if (value.empty()) env.erase(name);
    else env[name] = value;
    try {
      discover_launch(env);
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const LaunchError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

TEST(LaunchDiscovery, OneNodeSlurmStepStaysOnLoopback) {
  const LaunchContext c = discover_launch({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"},
                                           {"SLURM_STEP_NUM_NODES", "1"}, {"SLURM_STEP_NODELIST", "vm"},
                                           {"SLURM_JOB_ID", "7"}, {"SLURM_STEPID", "0"}});
  EXPECT_EQ(c.launcher, "slurm");
  EXPECT_TRUE(c.single_host());
  EXPECT_EQ(c.master_addr, "127.0.0.1");
}

// The batch script itself (`sbatch -n 2 script` running `commbench run`): Slurm 22's environment
// there, as dumped from a real batch job, has SLURM_PROCID=0 and the allocation's SLURM_NTASKS but
// no step id. Read as srun's task 0 it waited 2 minutes for a task 1 nobody started.
TEST(LaunchDiscovery, ASlurmBatchScriptRunsItsLocalRanksAndSaysSo) {
  const EnvMap batch{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_NNODES", "1"},
                     {"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "vm"}, {"SLURM_NODELIST", "vm"},
                     {"SLURM_CPUS_ON_NODE", "2"}, {"SLURM_TASK_PID", "11575"}};
  const LaunchContext c = discover_launch(batch);
  EXPECT_EQ(c.launcher, "local");
  EXPECT_EQ(c.agent_count, 1);
  EXPECT_NE(c.note.find("not by srun"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("srun commbench run"), std::string::npos) << c.note;
  try {
    discover_launch(batch, "slurm");
    ADD_FAILURE() << "--launcher slurm accepted the batch script";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("start it with srun"), std::string::npos) << e.what();
  }
  // mpirun inside the batch script: its tasks inherit the script's SLURM_PROCID, and are Open
  // MPI's tasks (the review: read as the batch script, each would have run the whole job alone).
  EnvMap under_mpirun = batch;
  for (const auto& [k, v] : EnvMap{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                   {"OMPI_MCA_ess_base_jobid", "9"}})
    under_mpirun[k] = v;
  const LaunchContext m = discover_launch(under_mpirun);
  EXPECT_EQ(m.launcher, "openmpi");
  EXPECT_EQ(m.agent_rank, 1);
  EXPECT_TRUE(m.note.empty()) << m.note;
  // A launcher commbench cannot read, inside the script: still refused, not run alone.
  EnvMap foreign = batch;
  foreign["PMIX_RANK"] = "1";
  EXPECT_THROW(discover_launch(foreign), LaunchError);
}

TEST(LaunchDiscovery, SlurmNodeLists) {
  EXPECT_EQ(first_slurm_host("node01"), "node01");
  EXPECT_EQ(first_slurm_host("node[03-05,09],gpu1"), "node03");
  EXPECT_EQ(first_slurm_host("a,b"), "a");
  EXPECT_EQ(first_slurm_host("rack1-n[0012,0020]"), "rack1-n0012");
  EXPECT_THROW(first_slurm_host("node[x-y]"), LaunchError);
  EXPECT_THROW(first_slurm_host("node[01"), LaunchError);
  EXPECT_THROW(first_slurm_host(""), LaunchError);
}

TEST(LaunchDiscovery, OpenMpiWithoutMasterUsesTheRendezvousFile) {
  const LaunchContext c = discover_launch({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                           {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                           {"OMPI_MCA_ess_base_jobid", "99"}, {"PMIX_RANK", "2"}});
  EXPECT_EQ(c.launcher, "openmpi");
  EXPECT_EQ(c.rendezvous, Rendezvous::kFile);
  EXPECT_EQ(c.job_id, "99");
  EXPECT_TRUE(c.single_host());
}

TEST(LaunchDiscovery, OpenMpiMissingASizeIsRefusedNotRunAlone) {
  EXPECT_THROW(discover_launch({{"OMPI_COMM_WORLD_RANK", "0"}}), LaunchError);
}

TEST(LaunchDiscovery, PmiVariables) {
  const LaunchContext c = discover_launch({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"PMI_KVSNAME", "kvs_1"},
                                           {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "3"},
                                           {"MASTER_ADDR", "h0"}, {"MASTER_PORT", "4000"}});
  EXPECT_EQ(c.launcher, "pmi");
  EXPECT_EQ(c.agent_count, 3);
  EXPECT_EQ(c.rendezvous, Rendezvous::kEnv);
}

TEST(LaunchDiscovery, TorchrunWinsOverTheRest) {
  const LaunchContext c = discover_launch({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                                           {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "x"}, {"MASTER_PORT", "1"},
                                           {"SLURM_PROCID", "0"}, {"OMPI_COMM_WORLD_RANK", "0"}});
  EXPECT_EQ(c.launcher, "torchrun");
}

TEST(LaunchDiscovery, AForeignLauncherIsRefusedInsteadOfRunningAlone) {
  // MVAPICH, plain PMIx, a bare LOCAL_RANK: one task of a parallel launch commbench cannot read.
  for (const char* hint : {"PMIX_RANK", "MV2_COMM_WORLD_RANK", "LOCAL_RANK", "RANK", "WORLD_SIZE"}) {
    try {
      discover_launch({{hint, "0"}});
      FAIL() << hint << " accepted";
    } catch (const LaunchError& e) {
      EXPECT_NE(std::string(e.what()).find(hint), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--launcher local"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(discover_launch({{"PMIX_RANK", "0"}}, "local").launcher, "local");  // by request
}

TEST(LaunchDiscovery, ForcedLauncher) {
  EXPECT_THROW(discover_launch({}, "slurm"), LaunchError);
  EXPECT_THROW(discover_launch({}, "lsf"), LaunchError);
  EXPECT_EQ(discover_launch({{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}}, "pmi").launcher, "pmi");
}

}  // namespace
}  // namespace commbench
