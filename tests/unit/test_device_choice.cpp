// The device rule shared by the core and the GPU plugins (commbench/sdk/device_choice.hpp).
#include <gtest/gtest.h>

#include "commbench/sdk/device_choice.hpp"

namespace commbench::sdk {
namespace {

TEST(DeviceChoice, LocalRankPicksItsDevice) {
  const DeviceChoice c = choose_device(2, 4, 4, std::nullopt, nullptr);
  EXPECT_TRUE(c.error.empty()) << c.error;
  EXPECT_EQ(c.device, 2);
}

TEST(DeviceChoice, MoreLocalRanksThanDevicesIsRefusedWithWhatToDo) {
  const DeviceChoice c = choose_device(1, 4, 2, std::nullopt, nullptr);
  EXPECT_EQ(c.device, -1);
  EXPECT_NE(c.error.find("4 ranks on this host but 2 visible GPU(s)"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << c.error;
}

TEST(DeviceChoice, OneDevicePinnedPerRankByTheLauncherIsThatRanksOwn) {
  // srun --gpus-per-task=1 / torchrun wrappers: every rank sees exactly its own GPU as device 0.
  EXPECT_EQ(choose_device(3, 4, 1, std::nullopt, "3").device, 0);
  // The same single device without CUDA_VISIBLE_DEVICES is one GPU shared by 4 ranks: refused.
  EXPECT_FALSE(choose_device(3, 4, 1, std::nullopt, nullptr).error.empty());
  EXPECT_FALSE(choose_device(3, 4, 1, std::nullopt, "").error.empty());
  // Two visible devices for four ranks is not a pinning the rule can read: refused.
  EXPECT_FALSE(choose_device(3, 4, 2, std::nullopt, "0,1").error.empty());
}

TEST(DeviceChoice, AnExplicitDeviceWinsButMustBeVisible) {
  EXPECT_EQ(choose_device(0, 8, 2, 1, nullptr).device, 1);
  const DeviceChoice bad = choose_device(0, 1, 2, 5, nullptr);
  EXPECT_NE(bad.error.find("device 5 was asked for but only 2 device(s) are visible"), std::string::npos) << bad.error;
  EXPECT_FALSE(choose_device(0, 1, 0, std::nullopt, nullptr).error.empty());
}

}  // namespace
}  // namespace commbench::sdk
