"""Everyday fill-in-the-blank sentences: does a masked LM know ordinary English?

Held-out accuracy measures a model on its own corpus (encyclopedia articles and news). These
sentences are written for this course, in everyday English that the corpus never contains word for
word; each lists the words that make a natural sentence. A sentence counts as filled when one of
them is among the model's top 5 guesses of transformers' `pipeline("fill-mask")`.

    from transformers import pipeline
    from minibert.data.blanks import EVERYDAY_BLANKS, fill_blanks
    score = fill_blanks(pipeline("fill-mask", model="checkpoints/bert-mlm-nsp"))
    score["top1"], score["top5"]
"""

EVERYDAY_BLANKS = [  # (sentence, the words that fill it)
    ("She opened the [MASK] and walked in.", {"door", "gate", "window"}),
    ("He drank a cup of [MASK].", {"tea", "coffee", "water", "milk", "wine"}),
    ("The children walk to [MASK] every morning.", {"school", "church", "work", "class"}),
    ("There are seven days in a [MASK].", {"week"}),
    ("There are twelve months in a [MASK].", {"year"}),
    ("The sun rises in the [MASK].", {"east", "morning"}),
    ("She wrote a [MASK] to her mother.", {"letter", "note", "poem", "song", "book", "card", "message"}),
    ("The doctor told him to stay in [MASK] for a week.", {"bed", "hospital", "hospitals"}),
    ("He parked the [MASK] outside the house.", {"car", "truck", "bus", "van", "bike", "cars", "vehicle"}),
    ("The cat sat on the [MASK].", {"mat", "floor", "table", "bed", "chair", "roof", "wall", "ground", "fence"}),
    ("They went to the [MASK] to buy some food.", {"shop", "shops", "store", "market", "supermarket", "town",
                                                   "city", "village", "bakery"}),
    ("Please close the [MASK] when you leave.", {"door", "window", "gate", "doors", "windows"}),
    ("The price of petrol went [MASK] again.", {"up", "down"}),
    ("She lives in a small [MASK] by the sea.", {"house", "town", "village", "city", "cottage", "hotel", "flat"}),
    ("The train leaves at nine o'clock in the [MASK].", {"morning", "evening"}),
    ("He turned off the [MASK] and went to sleep.", {"light", "lights", "television", "radio", "tv", "lamp",
                                                     "computer", "engine"}),
    ("We watched the [MASK] on television last night.", {"game", "match", "news", "film", "show", "movie", "race",
                                                         "final", "programme", "program", "games"}),
    ("The police arrested two [MASK] after the robbery.", {"men", "people", "women", "suspects", "boys",
                                                           "teenagers", "man", "youths", "others"}),
    ("He speaks English and [MASK].", {"french", "german", "spanish", "italian", "chinese", "japanese",
                                       "russian", "arabic", "dutch", "greek", "latin", "portuguese"}),
    ("The football [MASK] won the match.", {"team", "club", "side", "players", "teams"}),
    ("They got [MASK] last summer and now have two children.", {"married", "engaged", "together"}),
    ("The students sat quietly in the [MASK].", {"classroom", "room", "hall", "class", "library", "school",
                                                 "classrooms", "dark", "back", "corner"}),
    ("The shop is closed on [MASK].", {"sunday", "sundays", "monday", "mondays", "saturday", "saturdays",
                                       "weekends", "friday", "holidays", "tuesday", "wednesday", "thursday"}),
    ("He paid ten [MASK] for the ticket.", {"dollars", "pounds", "euros", "cents", "francs", "bucks", "times"}),
    ("Birds can [MASK], but fish cannot.", {"fly", "sing", "walk", "breathe", "see"}),
    ("The river flows into the [MASK].", {"sea", "ocean", "lake", "river", "bay", "valley", "gulf", "harbour"}),
    ("She was reading a [MASK] in the garden.", {"book", "newspaper", "letter", "magazine", "novel", "story",
                                                 "paper", "poem", "books"}),
    ("My father works as a [MASK] at the hospital.", {"doctor", "nurse", "surgeon", "cleaner", "porter",
                                                      "volunteer", "physician", "chaplain", "manager"}),
    ("Snow fell on the [MASK] all night.", {"mountains", "ground", "city", "town", "roof", "road", "hills",
                                           "village", "streets", "roads", "mountain", "house", "fields"}),
    ("The meeting will start in ten [MASK].", {"minutes", "days", "hours", "weeks"}),
    ("The president gave a [MASK] to the nation.", {"speech", "address", "statement", "message", "warning"}),
    ("They sailed across the [MASK] in a small boat.", {"sea", "ocean", "lake", "river", "bay", "channel",
                                                        "atlantic", "pacific", "harbour", "water"}),
    ("The plane landed safely at the [MASK].", {"airport", "base", "airfield", "station"}),
    ("He broke his [MASK] playing football.", {"leg", "arm", "nose", "ankle", "wrist", "hand", "neck", "back",
                                                "foot", "jaw", "finger", "knee", "shoulder"}),
    ("The bank lends [MASK] to people who want to buy a house.", {"money", "loans", "cash", "funds"}),
    ("The moon goes around the [MASK].", {"earth", "sun", "planet", "world"}),
    ("The fire was put out by the [MASK].", {"firefighters", "firemen", "fire", "brigade", "police", "rain",
                                            "army", "crew", "crews"}),
    ("The dog barked at the [MASK].", {"man", "postman", "cat", "door", "stranger", "boy", "children", "dog",
                                       "woman", "men", "people", "girl", "window"}),
    ("Please sit down on the [MASK].", {"chair", "floor", "bench", "sofa", "couch", "bed", "grass", "ground",
                                        "seat", "table"}),
    ("He went to the doctor because he felt [MASK].", {"sick", "ill", "unwell", "bad", "tired", "pain", "weak",
                                                       "better", "dizzy"}),
    ("The soldiers fought in the [MASK].", {"war", "battle", "army", "field", "wars", "streets", "front"}),
    ("Most people sleep at [MASK].", {"night", "home", "nights", "midnight"}),
    ("She called her friend on the [MASK].", {"phone", "telephone", "radio", "way", "weekend", "morning"}),
    ("The baby started to [MASK] when its mother left.", {"cry", "scream", "sleep", "walk", "talk", "shout",
                                                          "smile", "laugh"}),
    ("We need eggs, flour and [MASK] to make the cake.", {"sugar", "milk", "butter", "water", "salt", "oil"}),
    ("He washed his [MASK] before dinner.", {"hands", "face", "hair", "car", "clothes", "feet", "hand"}),
    ("The store sells fresh fruit and [MASK].", {"vegetables", "meat", "fish", "bread", "flowers", "milk",
                                                 "food", "eggs", "juice"}),
    ("She looked out of the [MASK] at the rain.", {"window", "door", "car", "house", "room", "windows"}),
    ("The old man walked slowly with a [MASK].", {"stick", "cane", "dog", "friend", "limp", "smile", "child"}),
    ("They grow wheat and [MASK] on the farm.", {"corn", "barley", "rice", "maize", "cotton", "sheep", "cattle",
                                                 "potatoes", "oats", "vegetables", "fruit", "grapes"}),
    ("It was so cold that the lake turned to [MASK].", {"ice", "snow", "stone", "water"}),
    ("The boy kicked the [MASK] over the fence.", {"ball", "football", "dog", "can"}),
    ("She is the [MASK] of three children.", {"mother", "eldest", "youngest", "oldest", "daughter", "sister",
                                              "father", "parent", "second", "first"}),
    ("He stood at the top of the [MASK] and looked down.", {"hill", "mountain", "stairs", "tower", "building",
                                                            "cliff", "ladder", "steps", "stairway", "road"}),
    ("The concert was cancelled because of the [MASK].", {"rain", "weather", "storm", "snow", "strike", "war",
                                                          "virus", "fire", "floods", "flood", "heat"}),
    ("I usually have toast for [MASK].", {"breakfast", "lunch", "dinner", "tea", "supper"}),
    ("The pilot flew the [MASK] through the storm.", {"plane", "aircraft", "helicopter", "jet", "airplane",
                                                      "ship", "balloon"}),
    ("He put on his coat because it was [MASK] outside.", {"cold", "raining", "snowing", "dark", "wet", "windy",
                                                           "freezing", "late"}),
    ("Her son is learning to play the [MASK].", {"piano", "guitar", "violin", "drums", "game", "flute", "cello",
                                                 "trumpet", "organ", "harp"}),
    ("The teacher wrote the answer on the [MASK].", {"board", "blackboard", "wall", "paper", "page", "card",
                                                     "screen", "whiteboard"}),
]


def fill_blanks(fill_mask, blanks=EVERYDAY_BLANKS):
    """Score a fill-mask pipeline on the blanks: the share of sentences whose first guess / top 5
    guesses include an accepted word, and each sentence's guesses. `one_token` lists the accepted
    words the tokenizer has as one token: a blank whose words are all split into pieces cannot be
    filled by a single [MASK]."""
    tokenizer = fill_mask.tokenizer
    rows = []
    for sentence, words in blanks:
        sentence = sentence.replace("[MASK]", tokenizer.mask_token)
        guesses = [g["token_str"].strip() for g in fill_mask(sentence, top_k=5)]
        rows.append({"sentence": sentence, "guesses": guesses, "top1": guesses[0] in words,
                     "top5": any(g in words for g in guesses),
                     "one_token": sorted(w for w in words if len(tokenizer.tokenize(w)) == 1)})
    return {"top1": sum(r["top1"] for r in rows) / len(rows), "top5": sum(r["top5"] for r in rows) / len(rows),
            "rows": rows}
