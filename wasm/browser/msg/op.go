package msg

// Op names a message: its "op" field.
type Op string

// The ops, by direction (see the package documentation for the fields).
const (
	// page → engine worker
	OpJob    Op = "job"
	OpCancel Op = "cancel"
	OpStacks Op = "stacks"
	// engine worker → page
	OpEvent Op = "event"
	OpDone  Op = "done"
	OpFail  Op = "fail"
	// dealer → pool worker
	OpModule Op = "module"
	OpOpen   Op = "open"
	OpPairs  Op = "pairs"
	OpPiece  Op = "piece"
	// pool worker → dealer
	OpOpened  Op = "opened"
	OpFigures Op = "figures"
	OpSpent   Op = "spent"
	// any engine.wasm worker → whoever started it
	OpReady Op = "ready"
	OpError Op = "error"
)
