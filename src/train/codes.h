// train's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::train {

// E-RUN and W-RUN (the run file and its run), E-INFER (the model alone).
std::span<const graph::CodeInfo> codes();

// The codes train raises, by what they mean; the loaders' own (E-RUN-020...) are in
// loaders.h. codes.cc holds their texts.
inline constexpr const char* kRunSettingInvalid = "E-RUN-001";       // unknown, or of the wrong kind
inline constexpr const char* kSecondDefrun = "E-RUN-002";            // a run file with two `defrun`s
inline constexpr const char* kUnknownKnob = "E-RUN-003";             // a --knob the file does not define
inline constexpr const char* kUnknownVariant = "E-RUN-004";          // a --variant the file does not define
inline constexpr const char* kRunDefinitionMissing = "E-RUN-005";    // no `model` or `loss`
inline constexpr const char* kFieldMissing = "E-RUN-006";            // a batch or prepared plist without it
inline constexpr const char* kNotAScalar = "E-RUN-007";              // a loss or metric that is not a scalar
inline constexpr const char* kRunStopped = "E-RUN-008";              // a non-finite loss, a failed guard
inline constexpr const char* kRunSettingMissing = "E-RUN-009";       // a defrun without what a run needs
inline constexpr const char* kOptimizerOption = "E-RUN-010";         // an optimizer or group option
inline constexpr const char* kScheduleOption = "E-RUN-011";          // a learning-rate schedule option
inline constexpr const char* kBatchNotSplit = "E-RUN-012";           // micro-batches the workers cannot share
inline constexpr const char* kWorkerLost = "E-RUN-013";              // a collective of a data-parallel run failed
inline constexpr const char* kNoMpi = "E-RUN-014";                   // launched by mpirun, MPI cannot start
inline constexpr const char* kGroupWithoutParameters = "W-RUN-001";  // an optimizer group no parameter joins
inline constexpr const char* kModelNotAlone = "E-INFER-001";         // a model that cannot run without the file

}  // namespace sx::train
