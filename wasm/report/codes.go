package report

// CodeDoc documents one finding code: the table the codes page, the
// generated wasm/CODES.md and the findings' links are made from. Its
// wording follows FORMATS §6 (Source "FORMATS §6") or this project's
// extension of it (Source "wasm/FORMATS.md"); a test checks that every
// Code constant has an entry, and that wasm/FORMATS.md lists every code it
// adds.
type CodeDoc struct {
	Code     Code   `json:"code"`
	Severity string `json:"severity"` // the severities it is given, in words
	When     string `json:"when"`     // what it means
	Fix      string `json:"fix"`      // what to look at or do
	Source   string `json:"source"`   // where the contract defines it
}

const (
	srcFormats = "FORMATS §6"
	srcOurs    = "wasm/FORMATS.md"
)

// Codes documents every finding code, in the order of FORMATS §6, then
// this project's own.
var Codes = []CodeDoc{
	{FileUnreadable, "fail", "A file cannot be opened or read, or is truncated.", "Check that the file is complete (its size against the host's listing) and readable; download it again.", srcFormats},
	{FileDigest, "fail", "A file's SHA-256, computed as its bytes passed, differs from the one its host lists (the Hub's LFS oid).", "The bytes read are not the bytes published: fetch the file again, or audit the commit the listing names.", srcFormats},
	{HeaderInvalid, "fail (warn: keys naming several adapters)", "The safetensors header is malformed: its length, its JSON, duplicate names, an unknown dtype or a bad shape.", "The file was not written by a safetensors writer, or was damaged: re-export it with safetensors.", srcFormats},
	{DataLayout, "fail", "Tensor offsets are out of bounds, overlap, leave gaps, or do not cover the data buffer.", "The data buffer does not match the header: re-export the file.", srcFormats},
	{ConfigInvalid, "fail", "adapter_config.json is malformed or not a plain LoRA (DoRA, another PEFT type).", "Fix adapter_config.json: peft_type LORA, use_dora false, r and lora_alpha numbers.", srcFormats},
	{ConfigMismatch, "fail (info: lora_alpha differs but the scaling is the same)", "The config and the tensors disagree (rank, target modules, layers), or the config and the claims do.", "Compare the subject's figures in the message: the config, the tensors or the claims profile is wrong.", srcFormats},
	{PairMissing, "fail", "A module the config and the claims call for has no A/B pair, or one half of it is missing.", "Add the missing factor, or correct target_modules / layers_to_transform and the claims.", srcFormats},
	{PairUnexpected, "fail", "A pair for a layer or module outside the config or the claims.", "Remove the pair, or add its module and layer to the config and the claims.", srcFormats},
	{ShapeMismatch, "fail", "A factor's shape does not fit r, or the module's out × in.", "lora_A must be [r, in] and lora_B [out, r]; check fan_in_fan_out and the module table.", srcFormats},
	{DtypeUnexpected, "fail", "A tensor's dtype differs from the claimed one.", "Convert the tensor, or correct the claims profile's dtype.", srcFormats},
	{ValuesNonfinite, "fail", "NaN or ±Inf in a tensor.", "The factor is corrupt or overflowed in export: recompute it.", srcFormats},
	{ParamsMismatch, "fail", "The total parameter count or byte count differs from the claim.", "A pair is missing or extra, or a shape differs: see the other findings, or correct the card's counts.", srcFormats},
	{RankDeficient, "fail (info: a matrix whose smaller side is below r)", "A large matrix's numerical rank is below r: some of its r directions carry nothing.", "The SVD kept fewer directions than r: re-extract at the claimed rank, or claim the lower rank.", srcFormats},
	{FactorForm, "warn", "A·Aᵀ and Bᵀ·B are not the same diagonal matrix, i.e. the factors are not A = √S·Vᵀ, B = U·√S.", "The product may still be right, but the factors are not the SVD's: re-split them as √S·Vᵀ and U·√S.", srcFormats},
	{ReportMismatch, "fail", "Figures disagree with extraction-report.json (spectrum, norms, shapes, counts), beyond their tolerance.", "The report and the factors come from different extractions: regenerate one from the other.", srcFormats},
	{RebuildError, "fail (info: residual below the claimed minimum)", "base + scaling·B·A differs from the tuned weight beyond the claim (residual against the bf16 noise, rebuilt relative error).", "Check that base and tuned are the claimed revisions, then the extraction.", srcFormats},
	{HiddenMismatch, "fail", "Token ids differ, shapes differ, or hidden states drift beyond tolerance (cosine, relative L2).", "Check the server's model, adapter and quantization against the reference's; the worst layer says where drift starts.", srcFormats},
	{AnswerMismatch, "fail", "A live or recorded decision differs from the reference.", "Compare the server's stack with the reference's; see the per-record table.", srcFormats},
	{ExtraTensors, "warn", "A tensor of the adapter is not a LoRA factor (a modules_to_save copy, an embedding LoRA, anything else): inventoried, not audited.", "Remove it, or check it by other means: clefcheck does not audit it.", srcOurs},
	{ConfigUnknown, "info", "adapter_config.json has fields clefcheck keeps and shows but does not interpret.", "Nothing to fix, unless a field changes the weights.", srcOurs},
	{DecisionFailed, "error (fail: the response broke the protocol)", "A decision request failed: the server could not be reached, timed out or answered an HTTP error, or its response broke the protocol.", "Check the server's URL, token and CORS; a protocol break is the server's fault.", srcOurs},
	{LimitExceeded, "fail", "An input goes beyond one of the engine's stated limits (tensors, shards, report matrices, lines, bytes, the exact Gram route's rank); the message names the limit.", "What lies beyond the limit was not checked: split the input, or check it natively.", srcOurs},
	{InputMissing, "error", "An input does not exist: a local path, HTTP 404/410, the Hub's EntryNotFound or RepoNotFound.", "Check the path or URL and the revision.", srcOurs},
	{InputUnreachable, "error", "An input could not be read for a reason outside the artifact: the network, a timeout, a server error after retries, a refused cross-origin request.", "Check the URL and the connection; from a page, the host must allow this origin (CORS) or be read through clefcheck proxy.", srcOurs},
	{InputRefused, "error", "HTTP 401/403: a token is needed, or the token lacks access.", "Give a token that can read it; request access first if the repository is gated.", srcOurs},
	{InputChanged, "error", "An input changed while it was read: a picked file modified, moved or deleted on disk (the browser then refuses to read it), or a URL whose answers named another file between two reads (a new size or strong ETag: a branch moved). What was read is not one file's bytes: nothing is said about it.", "A picked file: wait until it is complete, pick it again, run again. A URL: run again once it is stable, or audit a commit URL (/resolve/<commit>/), whose bytes never change.", srcOurs},
	{CheckCancelled, "error", "The check was stopped before it finished.", "Run it again to finish.", srcOurs},
	{CheckEmpty, "error", "Nothing to check: no reference files, no record answered, no record with a reference.", "Give the inputs the check compares.", srcOurs},
	{CheckInvalid, "error", "The check was asked for in a way it cannot run (a bad flag or option, a missing argument).", "Read the message: it names the option.", srcOurs},
}

// DocOf is the code's documentation (ok false for an unknown code).
func DocOf(c Code) (CodeDoc, bool) {
	for _, d := range Codes {
		if d.Code == c {
			return d, true
		}
	}
	return CodeDoc{}, false
}

// CodesMarkdown is the codes table as Markdown (wasm/CODES.md).
func CodesMarkdown() string {
	md := "# Finding codes\n\nGenerated from `wasm/report/codes.go` (`go generate ./wasm/report`); the pages show the same table at `/codes`. Severity `error` says the check could not be done, never that the artifact is bad.\n\n| code | severity | when | what to do | defined in |\n|---|---|---|---|---|\n"
	for _, d := range Codes {
		md += "| <a id=\"" + string(d.Code) + "\"></a>`" + string(d.Code) + "` | " + MDCell(d.Severity) + " | " + MDCell(d.When) + " | " + MDCell(d.Fix) + " | " + d.Source + " |\n"
	}
	return md
}
