// The device binding rule (device/gpu_binding.h, docs/gpu.md): pure, so every branch is tested
// without a GPU.
#include <gtest/gtest.h>

#include "device/gpu_binding.h"

namespace commbench {
namespace {

TEST(GpuBinding, LocalRankWhenThereAreEnoughDevices) {
  const DeviceChoice c = choose_device(3, 4, 8, std::nullopt, nullptr);
  EXPECT_EQ(c.error, "");
  EXPECT_EQ(c.device, 3);
  EXPECT_EQ(c.how, "local rank 3");
}

TEST(GpuBinding, OptionWinsAndIsCheckedAgainstTheVisibleDevices) {
  EXPECT_EQ(choose_device(0, 8, 2, 1, nullptr).device, 1);
  EXPECT_EQ(choose_device(0, 8, 2, 1, nullptr).how, "option device = 1");
  const DeviceChoice bad = choose_device(0, 1, 2, 5, nullptr);
  EXPECT_EQ(bad.device, -1);
  EXPECT_NE(bad.error.find("device = 5 but 2 device(s) are visible"), std::string::npos) << bad.error;
}

TEST(GpuBinding, OneDevicePinnedPerRankByTheLauncherIsDeviceZero) {
  const DeviceChoice c = choose_device(5, 8, 1, std::nullopt, "5");
  EXPECT_EQ(c.error, "");
  EXPECT_EQ(c.device, 0);
  EXPECT_NE(c.how.find("CUDA_VISIBLE_DEVICES=5"), std::string::npos) << c.how;
}

TEST(GpuBinding, MoreLocalRanksThanDevicesIsAnErrorThatSaysWhatToDo) {
  // One device visible, but CUDA_VISIBLE_DEVICES does not pin one per rank (unset or empty).
  for (const char* visible : {static_cast<const char*>(nullptr), "", " "}) {
    const DeviceChoice c = choose_device(1, 2, 1, std::nullopt, visible);
    EXPECT_EQ(c.device, -1);
    EXPECT_NE(c.error.find("2 ranks on this host but 1 visible GPU(s)"), std::string::npos) << c.error;
    EXPECT_NE(c.error.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << c.error;
  }
  EXPECT_NE(choose_device(2, 4, 2, std::nullopt, "0,1").error, "");
}

TEST(GpuBinding, NoDeviceIsAnError) {
  EXPECT_NE(choose_device(0, 1, 0, std::nullopt, nullptr).error, "");
}

}  // namespace
}  // namespace commbench

namespace commbench {
namespace {

// oversubscribe_gpu (rule 4): local rank r on device r mod the visible count, said so; without it
// the same host is an error that names the setting as a way out.
TEST(GpuBinding, SharedDevicesOnlyWhenTheRunAllowsIt) {
  const DeviceChoice c = choose_device(3, 4, 2, std::nullopt, nullptr, true);
  EXPECT_EQ(c.error, "");
  EXPECT_EQ(c.device, 1);
  EXPECT_NE(c.how.find("oversubscribe_gpu"), std::string::npos) << c.how;
  EXPECT_EQ(choose_device(1, 2, 1, std::nullopt, nullptr, true).device, 0);
  // Enough devices: sharing changes nothing.
  EXPECT_EQ(choose_device(1, 2, 2, std::nullopt, nullptr, true).how, "local rank 1");
  const DeviceChoice refused = choose_device(3, 4, 2, std::nullopt, nullptr, false);
  EXPECT_EQ(refused.device, -1);
  EXPECT_NE(refused.error.find("oversubscribe_gpu = true"), std::string::npos) << refused.error;
}

}  // namespace
}  // namespace commbench
