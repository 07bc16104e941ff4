package world

import "github.com/kvit-s/clefcheck/wasm/refs"

// Record is a test record (refs.Record).
type Record = refs.Record

// The demo world's test records, written for this project: short
// science questions in the shape of ARC-Challenge rows, and banking
// requests in the shape of BANKING77 rows. Their known answers are set by
// the generator (see Generate), not by the text.
var demoRecords = []Record{
	{ID: "arc-mini/q01", Dataset: "arc-mini", Prompt: "Which gas do plants take in from the air to make food? A) oxygen B) carbon dioxide C) helium D) nitrogen"},
	{ID: "arc-mini/q02", Dataset: "arc-mini", Prompt: "What makes a shadow? A) light blocked by an object B) sound waves C) wind D) heat"},
	{ID: "arc-mini/q03", Dataset: "arc-mini", Prompt: "Which tool measures temperature? A) ruler B) scale C) thermometer D) compass"},
	{ID: "arc-mini/q04", Dataset: "arc-mini", Prompt: "Water turning into ice is an example of A) melting B) freezing C) boiling D) rusting"},
	{ID: "arc-mini/q05", Dataset: "arc-mini", Prompt: "Which planet is closest to the Sun? A) Venus B) Earth C) Mars D) Mercury"},
	{ID: "arc-mini/q06", Dataset: "arc-mini", Prompt: "A magnet attracts which object? A) a paper clip B) a wooden spoon C) a glass cup D) a rubber band"},
	{ID: "arc-mini/q07", Dataset: "arc-mini", Prompt: "What part of a plant takes up water from the soil? A) flower B) leaf C) root D) seed"},
	{ID: "arc-mini/q08", Dataset: "arc-mini", Prompt: "Which is a renewable source of energy? A) coal B) wind C) oil D) natural gas"},
	{ID: "arc-mini/q09", Dataset: "arc-mini", Prompt: "The Moon shines because it A) burns gas B) reflects sunlight C) is hot D) has lamps"},
	{ID: "arc-mini/q10", Dataset: "arc-mini", Prompt: "Which body system moves blood around? A) digestive B) nervous C) circulatory D) skeletal"},
	{ID: "arc-mini/q11", Dataset: "arc-mini", Prompt: "Sound travels fastest through A) air B) a vacuum C) steel D) smoke"},
	{ID: "arc-mini/q12", Dataset: "arc-mini", Prompt: "A food chain starts with A) a producer B) a predator C) a decomposer D) a scavenger"},
	{ID: "arc-mini/q13", Dataset: "arc-mini", Prompt: "Which change is chemical? A) cutting paper B) burning wood C) melting wax D) bending wire"},
	{ID: "arc-mini/q14", Dataset: "arc-mini", Prompt: "Earth takes about how long to orbit the Sun? A) one day B) one month C) one year D) ten years"},
	{ID: "arc-mini/q15", Dataset: "arc-mini", Prompt: "Which layer of Earth do we live on? A) crust B) mantle C) outer core D) inner core"},
	{ID: "arc-mini/q16", Dataset: "arc-mini", Prompt: "A seed needs which of these to sprout? A) darkness only B) water C) salt D) ice"},
	{ID: "arc-mini/q17", Dataset: "arc-mini", Prompt: "Friction between two surfaces produces A) light B) magnetism C) heat D) sound only"},
	{ID: "arc-mini/q18", Dataset: "arc-mini", Prompt: "Which animal is a mammal? A) shark B) frog C) whale D) lizard"},
	{ID: "intents-mini/u01", Dataset: "intents-mini", Prompt: "My new card still hasn't shown up, it's been two weeks."},
	{ID: "intents-mini/u02", Dataset: "intents-mini", Prompt: "I think someone took my wallet with my card in it."},
	{ID: "intents-mini/u03", Dataset: "intents-mini", Prompt: "What rate do you use when I pay in euros?"},
	{ID: "intents-mini/u04", Dataset: "intents-mini", Prompt: "I tried to add money to my account but it didn't go through."},
	{ID: "intents-mini/u05", Dataset: "intents-mini", Prompt: "Where is the card you sent me? I need it for my trip."},
	{ID: "intents-mini/u06", Dataset: "intents-mini", Prompt: "Please block my card, I can't find it anywhere."},
	{ID: "intents-mini/u07", Dataset: "intents-mini", Prompt: "Why did I get so few dollars for my pounds?"},
	{ID: "intents-mini/u08", Dataset: "intents-mini", Prompt: "The top-up from my bank card was declined again."},
	{ID: "intents-mini/u09", Dataset: "intents-mini", Prompt: "How long does delivery of a replacement card take?"},
	{ID: "intents-mini/u10", Dataset: "intents-mini", Prompt: "My phone was stolen and the card was in its case."},
	{ID: "intents-mini/u11", Dataset: "intents-mini", Prompt: "Is the exchange rate better on weekdays?"},
	{ID: "intents-mini/u12", Dataset: "intents-mini", Prompt: "Adding funds failed with an error, what should I do?"},
	{ID: "intents-mini/u13", Dataset: "intents-mini", Prompt: "Can I track the letter with my card?"},
	{ID: "intents-mini/u14", Dataset: "intents-mini", Prompt: "I lost my card at the station yesterday."},
	{ID: "intents-mini/u15", Dataset: "intents-mini", Prompt: "Which rate applies to cash withdrawals abroad?"},
	{ID: "intents-mini/u16", Dataset: "intents-mini", Prompt: "Money I loaded is pending and then disappeared."},
	{ID: "intents-mini/u17", Dataset: "intents-mini", Prompt: "Has my card been posted yet?"},
	{ID: "intents-mini/u18", Dataset: "intents-mini", Prompt: "I saw a payment I did not make and my card is gone."},
}

var (
	arcOptions    = []string{"A", "B", "C", "D"}
	intentOptions = []string{"card_arrival", "lost_or_stolen_card", "exchange_rate", "top_up_failed"}
)

// Records returns the demo world's test records with their options.
func Records() []Record {
	out := make([]Record, len(demoRecords))
	for i, r := range demoRecords {
		r.Options = arcOptions
		if r.Dataset == "intents-mini" {
			r.Options = intentOptions
		}
		out[i] = r
	}
	return out
}
