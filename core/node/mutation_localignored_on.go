//go:build narad_mut_localignored

package node

// mutLocalIgnored plants a bug (Makefile MUTATION_TESTS): Config.ProduceLocalPartitions
// is ignored, so a message with neither key nor partition goes to any partition.
// TestProduceLocalPartitionsStayOnTheirNode catches it.
const mutLocalIgnored = true
