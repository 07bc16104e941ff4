package peft

import "strings"

// Half says which factor a tensor is.
type Half int

const (
	NotLoRA Half = iota
	HalfA
	HalfB
)

func (h Half) String() string {
	switch h {
	case HalfA:
		return "lora_A"
	case HalfB:
		return "lora_B"
	}
	return "other"
}

// Kind classifies a tensor of an adapter file.
type Kind int

const (
	KindLoRA      Kind = iota // lora_A / lora_B of a linear module
	KindEmbedding             // lora_embedding_A / lora_embedding_B
	KindSaved                 // a full copy of a module (modules_to_save) or any other tensor
)

// Key is a parsed adapter tensor name.
type Key struct {
	Name    string // the tensor's name in the file
	Module  string // module path without the base_model.model. prefix
	Half    Half
	Kind    Kind
	Adapter string // adapter name before .weight ("default"), "" when absent
}

// ParseKey splits an adapter tensor name. Accepted forms, with or without the
// "base_model.model." prefix:
//
//	<module>.lora_A.weight            <module>.lora_B.weight
//	<module>.lora_A.<adapter>.weight  <module>.lora_B.<adapter>.weight
//	<module>.lora_embedding_A[.<adapter>]  (embedding LoRA)
//
// Anything else is KindSaved with Module set to the name less the prefix.
func ParseKey(name string) Key {
	k := Key{Name: name, Kind: KindSaved}
	rest := strings.TrimPrefix(name, "base_model.model.")
	k.Module = rest
	parts := strings.Split(rest, ".")
	for i := len(parts) - 1; i >= 1; i-- {
		switch parts[i] {
		case "lora_A", "lora_B":
			tail := parts[i+1:]
			switch {
			case len(tail) == 1 && tail[0] == "weight":
			case len(tail) == 2 && tail[1] == "weight" && tail[0] != "":
				k.Adapter = tail[0]
			default:
				return k
			}
			k.Kind = KindLoRA
			k.Module = strings.Join(parts[:i], ".")
			k.Half = HalfA
			if parts[i] == "lora_B" {
				k.Half = HalfB
			}
			return k
		case "lora_embedding_A", "lora_embedding_B":
			tail := parts[i+1:]
			if len(tail) > 1 {
				return k
			}
			if len(tail) == 1 {
				k.Adapter = tail[0]
			}
			k.Kind = KindEmbedding
			k.Module = strings.Join(parts[:i], ".")
			k.Half = HalfA
			if parts[i] == "lora_embedding_B" {
				k.Half = HalfB
			}
			return k
		}
	}
	return k
}

// ShortModule is the module's last two name parts (mlp.gate_proj), the form
// target_modules and claims tables use.
func ShortModule(module string) string {
	parts := strings.Split(module, ".")
	if len(parts) >= 2 {
		return parts[len(parts)-2] + "." + parts[len(parts)-1]
	}
	return module
}
