#include "ui/case_filter_text.h"

#include <QStringList>

#include "ui/qt_text.h"

namespace tilepath::ui {

namespace {
// The CLI's filter flags (--run-id, --kv, --k-path, ...; app/cli/filter_flags.cpp) as keys.
const char* const kAllowedKeys =
    "run_id, backend, device, kv, k_path, mode, cache, mma, batch, context, head_dim, status";

int toInt(const QString& key, const QString& value) {
  bool ok = false;
  int v = value.toInt(&ok);
  if (!ok) throw ValidationError(ss(key), "'" + ss(value) + "' is not an integer", "an integer");
  return v;
}
}  // namespace

CaseFilter parseCaseFilter(const QString& text) {
  CaseFilter f;
  for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    int eq = word.indexOf(QLatin1Char('='));
    if (eq <= 0) throw ValidationError(ss(word), "expected key=value", kAllowedKeys);
    // "k-path" as the flag is spelled, "k_path" as the column is; "run" and "path" as before.
    const QString key = word.left(eq).toLower().replace(QLatin1Char('-'), QLatin1Char('_')), value = word.mid(eq + 1);
    const std::string v = ss(value);
    if (key == QLatin1String("run_id") || key == QLatin1String("run"))
      f.run_id = toInt(key, value);
    else if (key == QLatin1String("backend"))
      f.backend = v;
    else if (key == QLatin1String("device"))
      f.device = v;
    else if (key == QLatin1String("kv"))
      f.kv = std::string(to_string(parse_kv_dtype(v)));
    else if (key == QLatin1String("k_path") || key == QLatin1String("path"))
      f.k_path = std::string(to_string(parse_k_path(v)));
    else if (key == QLatin1String("mode"))
      f.mode = std::string(to_string(parse_transform_mode(v)));
    else if (key == QLatin1String("cache"))
      f.cache = std::string(to_string(parse_cache_state(v)));
    else if (key == QLatin1String("mma"))
      f.mma = std::string(to_string(parse_mma(v)));
    else if (key == QLatin1String("batch"))
      f.batch = toInt(key, value);
    else if (key == QLatin1String("context"))
      f.context = toInt(key, value);
    else if (key == QLatin1String("head_dim"))
      f.head_dim = toInt(key, value);
    else if (key == QLatin1String("status")) {
      bool found = false;
      for (CaseStatus s :
           {CaseStatus::ok, CaseStatus::failed, CaseStatus::unsupported, CaseStatus::error, CaseStatus::cancelled})
        if (to_string(s) == v) f.status = s, found = true;
      if (!found) throw ValidationError("status", "unknown value '" + v + "'", "ok|failed|unsupported|error|cancelled");
    } else {
      throw ValidationError(ss(key), "unknown filter key '" + ss(key) + "'", kAllowedKeys);
    }
  }
  return f;
}

}  // namespace tilepath::ui
