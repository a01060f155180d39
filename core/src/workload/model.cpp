#include "workload/model.h"

#include <array>
#include <stdexcept>

#include <fmt/format.h>

namespace commbench::workload {
namespace {

// ---- ResNet-50 (He et al. 2015, "Deep Residual Learning for Image Recognition", table 1; the
// v1.5 layout of torchvision's resnet50: stride on the 3x3 conv). Each conv carries its
// BatchNorm (2·C parameters: weight and bias). Activations per conv+BN unit: the conv output
// (kept for BN backward) and the BN output (kept for ReLU / the next conv's weight gradient),
// 2·C·H·W elements at 224x224 input. FLOPs: 2·k²·C_in·C_out·H_out·W_out (a multiply-add is 2).

struct Conv {
  uint64_t in, out, k, hw_out;
};

Layer conv_bn(std::string name, const Conv& c) {
  const uint64_t out_elems = c.out * c.hw_out * c.hw_out;
  return Layer{std::move(name), c.k * c.k * c.in * c.out + 2 * c.out, 2 * out_elems,
               2.0 * static_cast<double>(c.k * c.k * c.in) * static_cast<double>(out_elems)};
}

Model resnet50() {
  Model m{"resnet50",
          "He et al. 2015 (arXiv:1512.03385, table 1), layer layout of torchvision.models.resnet50 "
          "(v1.5): 25,557,032 parameters; activations from the feature maps at 224x224",
          {}};
  // Stem: 7x7/2 conv to 112x112, BN, ReLU, 3x3/2 max-pool to 56x56; the input image and the
  // pool output are kept too.
  Layer stem = conv_bn("conv1", {3, 64, 7, 112});
  stem.activations_per_sample += 3 * 224 * 224 + 64 * 56 * 56;
  m.layers.push_back(stem);
  const std::array<std::pair<uint64_t, int>, 4> stages{{{64, 3}, {128, 4}, {256, 6}, {512, 3}}};
  uint64_t in = 64, hw = 56;
  for (size_t s = 0; s < stages.size(); ++s) {
    const auto [planes, blocks] = stages[s];
    for (int b = 0; b < blocks; ++b) {
      const uint64_t stride = (s > 0 && b == 0) ? 2 : 1;
      const uint64_t hw_out = hw / stride;
      const std::string p = fmt::format("layer{}.{}.", s + 1, b);
      m.layers.push_back(conv_bn(p + "conv1", {in, planes, 1, hw}));
      m.layers.push_back(conv_bn(p + "conv2", {planes, planes, 3, hw_out}));
      m.layers.push_back(conv_bn(p + "conv3", {planes, planes * 4, 1, hw_out}));
      if (b == 0) m.layers.push_back(conv_bn(p + "downsample", {in, planes * 4, 1, hw_out}));
      in = planes * 4;
      hw = hw_out;
    }
  }
  // Global average pool to 2048, then fc 2048 -> 1000 with bias.
  m.layers.push_back(Layer{"fc", 2048 * 1000 + 1000, 2048 + 1000, 2.0 * 2048 * 1000});
  return m;
}

// ---- Transformers: embeddings, L blocks, a final layer. Embedding activations: its output s·h.

Model bert_large() {
  const TransformerShape t{24, 1024, 16, 30522, 512};
  Model m{"bert_large",
          "Devlin et al. 2018 (arXiv:1810.04805): 24 layers, hidden 1024, 16 heads, vocab 30522, "
          "sequence 512; 335,141,888 parameters as HF bert-large-uncased (with pooler; the paper "
          "quotes 340M); activations per block Korthikanti et al. 2022 (arXiv:2205.05198) eq. 1",
          {}};
  const uint64_t h = t.hidden, s = t.sequence;
  // Word, position (512), token-type (2) embeddings and their LayerNorm.
  m.layers.push_back(Layer{"embeddings", t.vocab * h + s * h + 2 * h + 2 * h, s * h, 0});
  for (uint64_t i = 0; i < t.layers; ++i)
    m.layers.push_back(Layer{fmt::format("encoder.{}", i), transformer_block_parameters(t),
                             transformer_block_activations(t), transformer_block_flops(t)});
  // Pooler: dense h -> h with bias on the first token.
  m.layers.push_back(Layer{"pooler", h * h + h, h, 2.0 * static_cast<double>(h * h)});
  return m;
}

Model gpt2_xl() {
  const TransformerShape t{48, 1600, 25, 50257, 1024};
  Model m{"gpt2_xl",
          "Radford et al. 2019 (\"Language Models are Unsupervised Multitask Learners\", table 2): "
          "48 layers, d_model 1600, 25 heads, vocab 50257, context 1024; 1,557,611,200 parameters "
          "as HF gpt2-xl (LM head tied to the token embedding); activations per block Korthikanti "
          "et al. 2022 (arXiv:2205.05198) eq. 1",
          {}};
  const uint64_t h = t.hidden, s = t.sequence;
  m.layers.push_back(Layer{"embeddings", t.vocab * h + s * h, s * h, 0});
  for (uint64_t i = 0; i < t.layers; ++i)
    m.layers.push_back(Layer{fmt::format("h.{}", i), transformer_block_parameters(t),
                             transformer_block_activations(t), transformer_block_flops(t)});
  // Final LayerNorm, and the tied LM head's logits (no parameters of its own): 2·s·h·V FLOPs.
  m.layers.push_back(Layer{"ln_f+lm_head", 2 * h, s * h + s * t.vocab,
                           2.0 * static_cast<double>(s * h) * static_cast<double>(t.vocab)});
  return m;
}

constexpr std::array<std::string_view, 3> kPresetNames{"resnet50", "bert_large", "gpt2_xl"};

}  // namespace

uint64_t Model::parameters() const {
  uint64_t n = 0;
  for (const Layer& l : layers) n += l.parameters;
  return n;
}

uint64_t Model::activations_per_sample() const {
  uint64_t n = 0;
  for (const Layer& l : layers) n += l.activations_per_sample;
  return n;
}

double Model::forward_flops_per_sample() const {
  double n = 0;
  for (const Layer& l : layers) n += l.forward_flops_per_sample;
  return n;
}

uint64_t transformer_block_parameters(const TransformerShape& t) {
  return 12 * t.hidden * t.hidden + 13 * t.hidden;
}

uint64_t transformer_block_activations(const TransformerShape& t) {
  const uint64_t bytes = t.sequence * t.hidden * 34 + 5 * t.heads * t.sequence * t.sequence;
  return bytes / 2;
}

double transformer_block_flops(const TransformerShape& t) {
  const double s = static_cast<double>(t.sequence), h = static_cast<double>(t.hidden);
  return 24 * s * h * h + 4 * s * s * h;
}

std::span<const std::string_view> model_preset_names() { return kPresetNames; }

std::optional<Model> model_preset(std::string_view name) {
  if (name == "resnet50") return resnet50();
  if (name == "bert_large") return bert_large();
  if (name == "gpt2_xl") return gpt2_xl();
  return std::nullopt;
}

Model even_model(uint64_t parameters, int layers, uint64_t activations_per_sample,
                 double forward_flops_per_sample) {
  if (layers < 1) throw std::invalid_argument("even_model: layers must be >= 1");
  const auto n = static_cast<uint64_t>(layers);
  Model m{"custom", "parameters and layer count given in the experiment file, split evenly", {}};
  for (uint64_t i = 0; i < n; ++i)
    m.layers.push_back(Layer{fmt::format("layer{}", i), parameters / n + (i < parameters % n ? 1 : 0),
                             activations_per_sample / n + (i < activations_per_sample % n ? 1 : 0),
                             forward_flops_per_sample / static_cast<double>(n)});
  return m;
}

nlohmann::json model_to_json(const Model& m) {
  nlohmann::json layers = nlohmann::json::array();
  for (const Layer& l : m.layers)
    layers.push_back({{"name", l.name},
                      {"parameters", l.parameters},
                      {"activations", l.activations_per_sample},
                      {"flops", l.forward_flops_per_sample}});
  return {{"name", m.name}, {"source", m.source}, {"layers", std::move(layers)}};
}

Model model_from_json(const nlohmann::json& j) {
  Model m{j.at("name").get<std::string>(), j.value("source", std::string{}), {}};
  for (const auto& l : j.at("layers"))
    m.layers.push_back(Layer{l.at("name").get<std::string>(), l.at("parameters").get<uint64_t>(),
                             l.value("activations", uint64_t{0}), l.value("flops", 0.0)});
  return m;
}

}  // namespace commbench::workload
