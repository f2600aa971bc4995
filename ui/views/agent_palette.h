#pragma once
// One colour per agent (stage graph, timeline lanes) and per stage (timeline
// blocks), shared so a legend means the same thing in every view.

#include <QColor>
#include <QString>

#include "core/stage.h"

namespace tilepath::ui {

QColor agentColour(Agent a);
QColor stageColour(Stage s);
QString agentTitle(Agent a);  // "memory pipe", "transform warps", ...
inline constexpr Agent kAllAgents[kAgentCount] = {Agent::memory, Agent::transform, Agent::qk_mma, Agent::softmax,
                                                  Agent::pv_mma};

}  // namespace tilepath::ui
