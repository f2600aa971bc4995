#include "ui/views/agent_palette.h"

namespace tilepath::ui {

QColor agentColour(Agent a) {
  switch (a) {
    case Agent::memory:
      return QColor(0x4e, 0x79, 0xa7);  // blue
    case Agent::transform:
      return QColor(0xf2, 0x8e, 0x2b);  // orange
    case Agent::qk_mma:
      return QColor(0x59, 0xa1, 0x4f);  // green
    case Agent::softmax:
      return QColor(0xb0, 0x7a, 0xa1);  // purple
    case Agent::pv_mma:
      return QColor(0xe1, 0x57, 0x59);  // red
  }
  return Qt::gray;
}

QColor stageColour(Stage s) {
  switch (s) {
    case Stage::k_load:
      return QColor(0x4e, 0x79, 0xa7);
    case Stage::v_load:
      return QColor(0x8c, 0xb4, 0xd9);
    case Stage::k_prep:
      return QColor(0xf2, 0x8e, 0x2b);
    case Stage::v_prep:
      return QColor(0xff, 0xbe, 0x7d);
    case Stage::qk:
      return QColor(0x59, 0xa1, 0x4f);
    case Stage::softmax:
      return QColor(0xb0, 0x7a, 0xa1);
    case Stage::k_bias:
      return QColor(0xed, 0xc9, 0x48);
    case Stage::pv:
      return QColor(0xe1, 0x57, 0x59);
    case Stage::accum:
      return QColor(0xff, 0x9d, 0x9a);
    case Stage::q_quant:
      return QColor(0x76, 0xb7, 0xb2);
    case Stage::combine:
      return QColor(0x9c, 0x75, 0x5f);
  }
  return Qt::gray;
}

QString agentTitle(Agent a) {
  switch (a) {
    case Agent::memory:
      return QStringLiteral("memory pipe");
    case Agent::transform:
      return QStringLiteral("transform warps");
    case Agent::qk_mma:
      return QStringLiteral("QK MMA warps");
    case Agent::softmax:
      return QStringLiteral("softmax");
    case Agent::pv_mma:
      return QStringLiteral("PV MMA warps");
  }
  return {};
}

}  // namespace tilepath::ui
