#include "ui/startup.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>

namespace tilepath::ui {

QString bundledDatabasePath() {
  const QString name = QStringLiteral("h200-sweep.sqlite");
  QStringList candidates;
  if (QCoreApplication::instance())
    candidates
        << QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("../share/tilepath/data/") + name);
  candidates << QStringLiteral(TILEPATH_SOURCE_DIR "/data/") + name;
  for (const QString& c : candidates)
    if (QFileInfo(c).isFile()) return QFileInfo(c).canonicalFilePath();
  return {};
}

namespace {

QString appDataDir() {
  QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  if (dir.isEmpty()) dir = QDir::home().filePath(QStringLiteral(".local/share/tilepath"));
  QDir().mkpath(dir);
  return dir;
}

}  // namespace

QString workingCopyOfBundledDatabase(QString* error) {
  const QString bundled = bundledDatabasePath();
  if (bundled.isEmpty()) return {};
  const QString copy = QDir(appDataDir()).filePath(QFileInfo(bundled).fileName());
  if (QFileInfo(copy).isFile()) return copy;
  if (!QFile::copy(bundled, copy)) {
    if (error) *error = QStringLiteral("could not copy %1 to %2").arg(bundled, copy);
    return {};
  }
  QFile::setPermissions(copy, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther);
  return copy;
}

QString demoDatabasePath() { return QDir(appDataDir()).filePath(QStringLiteral("demo.sqlite")); }

namespace {

// Every valid (path, mode) of every dtype control, applied to a base point.
std::vector<OperatingPoint> allVariants(const OperatingPoint& base) {
  std::vector<OperatingPoint> out;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (KPath path : valid_k_paths(kv)) {
      for (TransformMode mode : valid_modes(kv, path)) {
        OperatingPoint op = base;
        op.kv = kv;
        op.k_path = path;
        op.mode = mode;
        out.push_back(op);
      }
    }
  }
  return out;
}

}  // namespace

SweepSpec demoSimSweep() {
  SweepSpec spec;
  spec.name = "gui-demo-sim";
  spec.backend = "sim";
  spec.settings.gpu_model = "h200";
  spec.settings.warmup = 0;
  spec.settings.repeats = 1;
  OperatingPoint base;  // Llama-style 32/8 heads, D=128
  for (CacheState cache : {CacheState::hbm_cold, CacheState::l2_warm}) {
    for (int batch : {1, 8, 64}) {
      for (int context : {1024, 4096, 16384}) {
        base.batch = batch;
        base.context = context;
        base.cache = cache;
        for (const OperatingPoint& op : allVariants(base)) spec.cases.push_back(op);
      }
    }
  }
  return spec;
}

SweepSpec demoCpuSweep() {
  SweepSpec spec;
  spec.name = "gui-demo-cpu";
  spec.backend = "cpu";
  spec.settings.warmup = 0;
  spec.settings.repeats = 2;
  spec.settings.seed = 1;
  OperatingPoint base;
  base.batch = 1;
  base.q_heads = 4;
  base.kv_heads = 1;
  base.head_dim = 64;
  for (int context : {256, 512}) {
    base.context = context;
    for (KvDtype kv : {KvDtype::k16v16, KvDtype::k16v8, KvDtype::k8v8}) {
      OperatingPoint op = base;
      op.kv = kv;
      op.k_path = default_k_path(kv);
      op.mode = default_mode(kv, op.k_path);
      spec.cases.push_back(op);
    }
  }
  return spec;
}

}  // namespace tilepath::ui
