#include "ui/views/runs_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/case_filter_text.h"
#include "ui/database_session.h"
#include "ui/models/case_comparison_model.h"
#include "ui/models/cases_model.h"
#include "ui/models/runs_model.h"
#include "ui/qt_text.h"
#include "ui/views/profiler_panel.h"
#include "ui/views/sort_arrow_style.h"

namespace tilepath::ui {

// Cases of the selected run (if any) whose text matches every word of the filter.
// The cases table's filter: `key=value` terms with the CLI's keys (`kv=k8v8
// k_path=transform batch=64`, parseCaseFilter), matched on the stored case itself, and
// plain words matched anywhere in the row's text.
class CaseFilterProxy : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setRun(std::optional<qint64> run) {
    run_ = run;
    invalidateFilter();
  }
  void setFilter(const CaseFilter& filter, const QStringList& words) {
    filter_ = filter;
    words_ = words;
    invalidateFilter();
  }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    const auto* cases = static_cast<const CasesModel*>(sourceModel());
    const CaseSummary& c = cases->caseAt(row);
    const OperatingPoint& op = c.record.op;
    const CaseFilter& f = filter_;
    if (run_ && c.run_id != *run_) return false;
    if ((f.run_id && c.run_id != *f.run_id) || (f.backend && c.backend != *f.backend) ||
        (f.device && c.device != *f.device) || (f.kv && to_string(op.kv) != *f.kv) ||
        (f.k_path && to_string(op.k_path) != *f.k_path) || (f.mode && to_string(op.mode) != *f.mode) ||
        (f.cache && to_string(op.cache) != *f.cache) || (f.batch && op.batch != *f.batch) ||
        (f.context && op.context != *f.context) || (f.head_dim && op.head_dim != *f.head_dim) ||
        (f.status && c.record.status != *f.status))
      return false;
    if (words_.isEmpty()) return true;
    QString text;
    for (int col = 0; col < cases->columnCount(); ++col)
      text += cases->index(row, col, parent).data().toString() + QLatin1Char(' ');
    for (const QString& w : words_)
      if (!text.contains(w, Qt::CaseInsensitive)) return false;
    return true;
  }
  // The integer columns without a QVariant per side (the order is the same): every reload
  // sorts the cases again, by case id unless the user picked another column.
  bool lessThan(const QModelIndex& a, const QModelIndex& b) const override {
    const auto* cases = static_cast<const CasesModel*>(sourceModel());
    if (sortRole() == CasesModel::SortRole && a.column() == b.column()) {
      const std::optional<qint64> x = CasesModel::integerSortKey(cases->caseAt(a.row()), a.column());
      const std::optional<qint64> y = CasesModel::integerSortKey(cases->caseAt(b.row()), b.column());
      if (x && y) return *x < *y;
    }
    return QSortFilterProxyModel::lessThan(a, b);
  }

 private:
  std::optional<qint64> run_;
  CaseFilter filter_;
  QStringList words_;
};

namespace {
QTableView* makeTable(QAbstractItemModel* model, bool sortable) {
  auto* t = new QTableView;
  t->setModel(model);
  if (sortable) useOrderPointingSortArrows(t->horizontalHeader());
  t->setSortingEnabled(sortable);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->verticalHeader()->hide();
  t->verticalHeader()->setDefaultSectionSize(22);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setAlternatingRowColors(true);
  return t;
}
}  // namespace

RunsView::RunsView(DatabaseSession* session, QWidget* parent) : QWidget(parent), session_(session) {
  runs_model_ = new RunsModel(this);
  cases_model_ = new CasesModel(this);
  cases_model_->setMessageReader([session](std::int64_t case_id) { return session->loadCase(case_id).message; });
  cases_proxy_ = new CaseFilterProxy(this);
  cases_proxy_->setSourceModel(cases_model_);
  cases_proxy_->setSortRole(CasesModel::SortRole);
  comparison_model_ = new CaseComparisonModel(this);

  auto* runs_proxy = new QSortFilterProxyModel(this);
  runs_proxy->setSourceModel(runs_model_);
  runs_proxy->setSortRole(RunsModel::SortRole);
  runs_table_ = makeTable(runs_proxy, true);
  runs_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  cases_table_ = makeTable(cases_proxy_, true);
  cases_table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  // The initial order is a real sort, so the header's indicator says what the rows show.
  runs_table_->sortByColumn(RunsModel::Id, Qt::AscendingOrder);
  cases_table_->sortByColumn(CasesModel::Id, Qt::AscendingOrder);
  comparison_table_ = makeTable(comparison_model_, false);
  comparison_table_->setSelectionMode(QAbstractItemView::NoSelection);
  // Field names and the differences keep their width; A and B share the rest, long texts
  // (kernel names, hashes) elided, so the numbers stay in view without scrolling sideways.
  QHeaderView* compare_header = comparison_table_->horizontalHeader();
  compare_header->setStretchLastSection(false);
  compare_header->setSectionResizeMode(QHeaderView::ResizeToContents);
  compare_header->setSectionResizeMode(CaseComparisonModel::CaseA, QHeaderView::Stretch);
  compare_header->setSectionResizeMode(CaseComparisonModel::CaseB, QHeaderView::Stretch);
  comparison_table_->setTextElideMode(Qt::ElideMiddle);

  filter_ = new QLineEdit;
  filter_->setPlaceholderText(
      tr("filter cases: key=value as in the CLI (kv=k8v8 k_path=transform batch=64) or words, e.g. \"kv=k8v8 cold\""));
  filter_->setClearButtonEnabled(true);
  filter_error_ = new QLabel;
  filter_error_->setObjectName(QStringLiteral("filterError"));
  filter_error_->setStyleSheet(QStringLiteral("color: #b00020;"));
  filter_error_->setWordWrap(true);
  filter_error_->hide();
  connect(filter_, &QLineEdit::textChanged, this, &RunsView::applyFilter);
  auto* all_runs = new QPushButton(tr("All runs"));
  connect(all_runs, &QPushButton::clicked, this, [this] { runs_table_->clearSelection(); });
  counts_ = new QLabel;

  connect(cases_table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &RunsView::onCaseSelectionChanged);
  connect(runs_table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &RunsView::onRunSelectionChanged);

  auto* filter_row = new QHBoxLayout;
  filter_row->addWidget(filter_, 1);
  filter_row->addWidget(all_runs);
  filter_row->addWidget(counts_);
  auto* cases_box = new QWidget;
  auto* cases_layout = new QVBoxLayout(cases_box);
  cases_layout->setContentsMargins(0, 0, 0, 0);
  cases_layout->addLayout(filter_row);
  cases_layout->addWidget(filter_error_);
  cases_layout->addWidget(cases_table_, 1);
  auto* compare_box = new QWidget;
  auto* compare_layout = new QVBoxLayout(compare_box);
  compare_layout->setContentsMargins(0, 0, 0, 0);
  compare_layout->addWidget(new QLabel(tr("<b>Compare</b> — select two cases (Ctrl+click)")));
  compare_layout->addWidget(comparison_table_, 1);
  profiler_ = new ProfilerPanel;
  auto* compare_and_profile = new QSplitter(Qt::Vertical);
  compare_and_profile->addWidget(compare_box);
  compare_and_profile->addWidget(profiler_);

  auto* right = new QSplitter(Qt::Horizontal);
  right->addWidget(cases_box);
  right->addWidget(compare_and_profile);
  right->setStretchFactor(0, 1);
  right->setStretchFactor(1, 1);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(runs_table_);
  split->addWidget(right);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split);
}

const QAbstractItemModel* RunsView::visibleCases() const { return cases_proxy_; }

void RunsView::setFilterText(const QString& text) { filter_->setText(text); }

void RunsView::applyFilter(const QString& text) {
  QStringList terms, words;
  for (const QString& w : text.split(QLatin1Char(' '), Qt::SkipEmptyParts))
    (w.contains(QLatin1Char('=')) ? terms : words) << w;
  CaseFilter filter;
  filter_error_text_.clear();
  try {
    filter = parseCaseFilter(terms.join(QLatin1Char(' ')));
  } catch (const std::exception& e) {
    // An unknown key or value filters nothing out and says what is allowed.
    filter_error_text_ = qs(e.what());
    filter = CaseFilter{};
  }
  filter_error_->setText(filter_error_text_);
  filter_error_->setVisible(!filter_error_text_.isEmpty());
  filter_->setStyleSheet(filter_error_text_.isEmpty() ? QString() : QStringLiteral("border: 1px solid #b00020;"));
  cases_proxy_->setFilter(filter, words);
  updateCounts();
}

QString RunsView::countsText() const { return counts_->text(); }

void RunsView::updateCounts() {
  const std::size_t total = session_->cases().size();
  const int shown = cases_proxy_->rowCount();
  counts_->setText(static_cast<std::size_t>(shown) == total
                       ? tr("%1 runs, %2 cases").arg(session_->runs().size()).arg(total)
                       : tr("%1 runs, %2 of %3 cases").arg(session_->runs().size()).arg(shown).arg(total));
}

void RunsView::reload() {
  // The compared cases may be gone or changed in what was reloaded: the panes start empty.
  comparison_model_->clear();
  profiler_->setCase(CaseRecord{});
  runs_model_->setRuns(session_->runs(), session_->cases());
  cases_model_->setSharedCases(session_->sharedCases());
  runs_table_->resizeColumnsToContents();
  cases_table_->resizeColumnsToContents();
  updateCounts();
}

void RunsView::selectCases(const QList<qint64>& caseIds) {
  QItemSelection selection;
  for (qint64 id : caseIds) {
    int row = cases_model_->rowOfCase(id);
    if (row < 0) continue;
    QModelIndex proxy_index = cases_proxy_->mapFromSource(cases_model_->index(row, 0));
    if (proxy_index.isValid()) selection.select(proxy_index, proxy_index);
  }
  cases_table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  if (!selection.isEmpty()) cases_table_->scrollTo(selection.indexes().front(), QAbstractItemView::PositionAtCenter);
}

void RunsView::onRunSelectionChanged() {
  QModelIndexList rows = runs_table_->selectionModel()->selectedRows();
  if (rows.isEmpty())
    cases_proxy_->setRun(std::nullopt);
  else
    cases_proxy_->setRun(rows.front().data(RunsModel::RunIdRole).toLongLong());
  updateCounts();
}

void RunsView::onCaseSelectionChanged() {
  QModelIndexList rows = cases_table_->selectionModel()->selectedRows();
  std::optional<CaseRecord> a, b;
  if (rows.size() >= 1) a = session_->loadCase(rows[0].data(CasesModel::CaseIdRole).toLongLong());
  if (rows.size() >= 2) b = session_->loadCase(rows[1].data(CasesModel::CaseIdRole).toLongLong());
  comparison_model_->setCases(a, b);
  profiler_->setCase(rows.isEmpty() ? CaseRecord{}
                                    : session_->loadCase(rows[0].data(CasesModel::CaseIdRole).toLongLong(),
                                                         /*withArtifacts=*/true));
  if (!rows.isEmpty()) {
    int source = cases_proxy_->mapToSource(rows.front()).row();
    if (source >= 0) emit caseSelected(cases_model_->caseAt(source));
  }
}

}  // namespace tilepath::ui
