package audit

import "github.com/rlgate/rlgate/ledger/records"

// The body types of the kinds the audits, comparisons and the gate write.
func init() {
	for _, k := range []string{records.KindGold, records.KindSplit, records.KindBudget, records.KindReward, records.KindTraining, records.KindIdentity} {
		records.Register[Report](k, 1)
	}
	records.Register[WeightsReport](records.KindWeights, 1)
	records.Register[Comparison](records.KindComparison, 1)
	records.Register[Verdict](records.KindVerdict, 1)
}
