// Package conformance is a corpus of reconciler-shaped Go: each exported
// function of each file here returns a string that says what the Go it
// runs did. The sandbox's conformance test calls every function compiled
// (Go's answer), then runs each file on its own in a sandbox child, as
// learner code, and compares the answers: where the interpreter differs
// from Go, the sandbox must rewrite the construct or refuse it, never run
// it wrongly.
//
// A file here is a whole learner file but for the reconciler, which the
// test adds: it may use only what learner code may import, and only
// declarations of its own (each file runs alone in the sandbox).
package conformance

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cases are the corpus's functions by name, for the compiled side;
// TestConformanceCasesAreListed keeps it complete.
var Cases = map[string]func() string{
	"AssignDefineMixed":                    AssignDefineMixed,
	"AssignFieldsConstants":                AssignFieldsConstants,
	"AssignFieldsWithCall":                 AssignFieldsWithCall,
	"AssignInStatementSlots":               AssignInStatementSlots,
	"AssignIndexEvaluatedFirst":            AssignIndexEvaluatedFirst,
	"AssignIntoConditions":                 AssignIntoConditions,
	"AssignOps":                            AssignOps,
	"AssignSwaps":                          AssignSwaps,
	"AssignThroughPointers":                AssignThroughPointers,
	"AssignTupleFromCall":                  AssignTupleFromCall,
	"AssignTwoCalls":                       AssignTwoCalls,
	"AssignValueThenCall":                  AssignValueThenCall,
	"ClearAMap":                            ClearAMap,
	"ClosuresCounter":                      ClosuresCounter,
	"ClosuresDeferInLoop":                  ClosuresDeferInLoop,
	"ClosuresForLoop":                      ClosuresForLoop,
	"ClosuresLoopPointers":                 ClosuresLoopPointers,
	"ClosuresLoopVarChangedInBody":         ClosuresLoopVarChangedInBody,
	"ClosuresRangeLoop":                    ClosuresRangeLoop,
	"ClosuresRecursive":                    ClosuresRecursive,
	"CombosAssignWithMethodCallsOnTheLeft": CombosAssignWithMethodCallsOnTheLeft,
	"CombosCapturedLoopWithTwoVars":        CombosCapturedLoopWithTwoVars,
	"CombosDeferInLoopWithMethodValue":     CombosDeferInLoopWithMethodValue,
	"CombosDeferredAssign":                 CombosDeferredAssign,
	"CombosLabelledTypeSwitch":             CombosLabelledTypeSwitch,
	"CombosMethodValueLast":                CombosMethodValueLast,
	"CombosMultilineDefer":                 CombosMultilineDefer,
	"CombosTypeSwitchInLoop":               CombosTypeSwitchInLoop,
	"ConstsDurations":                      ConstsDurations,
	"ConstsIota":                           ConstsIota,
	"ConstsTypedAndUntyped":                ConstsTypedAndUntyped,
	"DeferInLiteralOfLaterFunction":        DeferInLiteralOfLaterFunction,
	"DeferMethodValue":                     DeferMethodValue,
	"DeferNamedResult":                     DeferNamedResult,
	"DeferOrder":                           DeferOrder,
	"DeferRecover":                         DeferRecover,
	"DeferRecoverRuntimeError":             DeferRecoverRuntimeError,
	"DeferRecoverValue":                    DeferRecoverValue,
	"EmbeddingAPIStructs":                  EmbeddingAPIStructs,
	"EmbeddingInterface":                   EmbeddingInterface,
	"EmbeddingPointer":                     EmbeddingPointer,
	"EmbeddingPromotedFieldsAndMethods":    EmbeddingPromotedFieldsAndMethods,
	"ErrorsAPIPredicates":                  ErrorsAPIPredicates,
	"ErrorsAsStatusError":                  ErrorsAsStatusError,
	"ErrorsJoin":                           ErrorsJoin,
	"ErrorsNamedResultWrap":                ErrorsNamedResultWrap,
	"ErrorsTypedNil":                       ErrorsTypedNil,
	"ErrorsWrapIs":                         ErrorsWrapIs,
	"LabelsBreakFromSwitchInLoop":          LabelsBreakFromSwitchInLoop,
	"LabelsBreakOuter":                     LabelsBreakOuter,
	"LabelsContinueOuter":                  LabelsContinueOuter,
	"LabelsGoto":                           LabelsGoto,
	"MapsDeleteDuringRange":                MapsDeleteDuringRange,
	"MapsIterateSorted":                    MapsIterateSorted,
	"MapsMissingKeys":                      MapsMissingKeys,
	"MapsNested":                           MapsNested,
	"MapsOfPointers":                       MapsOfPointers,
	"MethodsExpressions":                   MethodsExpressions,
	"MethodsOfAPITypes":                    MethodsOfAPITypes,
	"MethodsStringerThroughFmt":            MethodsStringerThroughFmt,
	"MethodsThroughInterfaces":             MethodsThroughInterfaces,
	"MethodsValueBindsACopy":               MethodsValueBindsACopy,
	"MethodsValueOfPointerReceiver":        MethodsValueOfPointerReceiver,
	"MinMax":                               MinMax,
	"RangeIntCaptured":                     RangeIntCaptured,
	"RangeIntForms":                        RangeIntForms,
	"RangeIntNested":                       RangeIntNested,
	"ReconcileChildren":                    ReconcileChildren,
	"ReconcileConditions":                  ReconcileConditions,
	"ReconcileFinalizers":                  ReconcileFinalizers,
	"ScopesIfElseChain":                    ScopesIfElseChain,
	"ScopesNamedResultShadow":              ScopesNamedResultShadow,
	"ScopesShadowedErr":                    ScopesShadowedErr,
	"SelectsBreakOutOfLoop":                SelectsBreakOutOfLoop,
	"SelectsDefault":                       SelectsDefault,
	"SelectsNilChannel":                    SelectsNilChannel,
	"SelectsRangeChannel":                  SelectsRangeChannel,
	"SelectsSendAndClosed":                 SelectsSendAndClosed,
	"SlicesAppendAliasing":                 SlicesAppendAliasing,
	"SlicesArraysAreValues":                SlicesArraysAreValues,
	"SlicesCopyAndDelete":                  SlicesCopyAndDelete,
	"SlicesOfSlices":                       SlicesOfSlices,
	"SlicesPointerIntoElement":             SlicesPointerIntoElement,
	"SlicesRangeValueCopies":               SlicesRangeValueCopies,
	"SlicesSortStructs":                    SlicesSortStructs,
	"StringsBytesAndRunes":                 StringsBytesAndRunes,
	"StringsCompareAndConcat":              StringsCompareAndConcat,
	"StringsFormatVerbs":                   StringsFormatVerbs,
	"StringsHelpers":                       StringsHelpers,
	"StringsRangeRunes":                    StringsRangeRunes,
	"StructsAnonymousAndNested":            StructsAnonymousAndNested,
	"StructsCompare":                       StructsCompare,
	"StructsCopies":                        StructsCopies,
	"StructsPointerReceiversOnValues":      StructsPointerReceiversOnValues,
	"StructsZeroValuesOfAPITypes":          StructsZeroValuesOfAPITypes,
	"SwitchesFallthrough":                  SwitchesFallthrough,
	"SwitchesInitAndTag":                   SwitchesInitAndTag,
	"SwitchesNoCondition":                  SwitchesNoCondition,
	"SwitchesOnStrings":                    SwitchesOnStrings,
	"SwitchesTypeSwitch":                   SwitchesTypeSwitch,
	"SwitchesTypeSwitchOnError":            SwitchesTypeSwitchOnError,
	"SwitchesTypeSwitchOwnTypes":           SwitchesTypeSwitchOwnTypes,
	"VariadicAnyForwarding":                VariadicAnyForwarding,
	"VariadicAppend":                       VariadicAppend,
	"VariadicCalls":                        VariadicCalls,
	"VariadicFuncValue":                    VariadicFuncValue,
}

// ClientCases are the functions that also take a client, which the test
// gives the same objects on both sides.
var ClientCases = map[string]func(context.Context, client.Client) string{
	"EmbeddingClient":         EmbeddingClient,
	"ReconcileCreateOrUpdate": ReconcileCreateOrUpdate,
}
