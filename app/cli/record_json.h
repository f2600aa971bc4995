#pragma once
// JSON view of a stored case, printed by `run --json`.

#include <nlohmann/json.hpp>

#include "core/store/run_store.h"

namespace tilepath::cli {

// {"case_id","case_key","status","message","op":{...},"measurements":{name:value},
//  "stage_costs":[{stage,method,cost_us}],"prediction":{...},"quality":[...],
//  "artifacts":[{name,mime,size}],"kernel":{...,"occupancy_achieved",...}}
nlohmann::json case_record_json(const CaseRecord& rec);

}  // namespace tilepath::cli
