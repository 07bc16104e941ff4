// Package peft reads a PEFT LoRA adapter's configuration and tensor names,
// following PEFT's own rules:
//
//   - scaling = lora_alpha / r, or lora_alpha / √r with use_rslora, where r
//     and lora_alpha may be overridden per module by rank_pattern and
//     alpha_pattern: a pattern key k matches module name m when
//     m fully matches (.*\.)?(k), and the first key that matches wins;
//   - target_modules is a list (a module matches when its name equals an
//     entry or ends with "." + entry) or a single regular expression (full
//     match);
//   - layers_to_transform (a list or one int) keeps modules whose layer index
//     — the number after layers_pattern, or after any name part when no
//     pattern is set — is listed.
//
// ΔW for a module is scaling · B · A, with lora_A of shape [r, in] and
// lora_B of shape [out, r] (transposed when fan_in_fan_out).
//
// ReadConfig reads and parses adapter_config.json from a file system, at
// most MaxConfigSize bytes of it: the one way the engine (audit, rebuild,
// the demo model) reads the file. Its errors wrap ErrUnreadable (the file
// is missing, too large or unreadable; the cause, a file.unreadable
// error of package source, is wrapped too) or ErrInvalid (the file is not
// a valid LoRA configuration: a config.invalid *report.Error).
package peft
