// A step's results decoded by their bindings: the loss and metrics by name, each counter's
// count added to its total, and the guards that failed by their binding names.
#include "train/step_results.h"

#include <gtest/gtest.h>

namespace sx::train {
namespace {

using runtime::Binding;
using runtime::Role;

TEST(StepResults, AreDecodedByTheirBindingsNotTheirPlaces) {
  std::vector<Binding> bindings{{Role::metric, "lr"},   {Role::guard, "guard: finite"},     {Role::counter, "tokens"},
                                {Role::metric, "loss"}, {Role::guard, "guard: finite (2)"}, {Role::metric, "accuracy"}};
  std::vector<double> values{0.001, 1, 128, 2.5, 0, 0.75};
  StepResults results = decode_step_results(bindings, values);
  EXPECT_EQ(results.loss, 2.5);
  EXPECT_EQ(results.metrics,
            (std::vector<std::pair<std::string, double>>{{"lr", 0.001}, {"loss", 2.5}, {"accuracy", 0.75}}));
  EXPECT_EQ(results.counts, (std::vector<std::pair<std::string, double>>{{"tokens", 128}}));
  EXPECT_EQ(results.failed_guards, std::vector<std::string>{"guard: finite (2)"});
}

TEST(StepResults, ACountJoinsItsTotalAndIsLoggedAsTheTotal) {
  StepResults results = decode_step_results(
      std::vector<Binding>{{Role::metric, "loss"}, {Role::counter, "tokens"}, {Role::counter, "rows"}},
      std::vector<double>{1.5, 64, 4});
  std::map<std::string, double> totals{{"tokens", 1000}};
  EXPECT_EQ(results.logged(totals),
            (std::vector<std::pair<std::string, double>>{{"loss", 1.5}, {"tokens", 1064}, {"rows", 4}}));
  EXPECT_EQ(results.logged(totals),
            (std::vector<std::pair<std::string, double>>{{"loss", 1.5}, {"tokens", 1128}, {"rows", 8}}));
  EXPECT_EQ(totals, (std::map<std::string, double>{{"rows", 8}, {"tokens", 1128}}));
}

}  // namespace
}  // namespace sx::train
