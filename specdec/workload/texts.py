"""The benchmark prompts' texts: Spec-Bench's six task kinds, eleven prompts each (:data:`PROMPTS`).

Spec-Bench (Xia et al., 2024) groups speculative-decoding workloads into multi-turn
conversation, translation, summarisation, question answering, mathematical reasoning
and retrieval-augmented generation; how much a draft helps depends on the kind
(prompt lookup needs the answer to repeat the prompt, a model draft needs predictable
text).  SPEED-Bench adds that a prompt set of low diversity biases acceptance, so
each kind's prompts differ in topic (and translation's in language).  Every prompt is a
list of chat messages.  The first six of each kind are the original set, unchanged and first:
benchmark history compares seeded metrics of prompt 0.  The texts are original to this project.
"""

from __future__ import annotations


_LIBRARY = (
    "The committee met on Tuesday to review the budget for the new library. After a long discussion, "
    "the members agreed to increase the funding for children's books, to extend the opening hours on "
    "weekends, and to hire two additional librarians. The final report will be published next month on "
    "the city's website."
)
_HARBOUR = (
    "The old harbour of Calden was rebuilt in 1874 after a storm destroyed the wooden piers. The new stone "
    "pier was 240 metres long and could hold twelve fishing boats. In 1921 a lighthouse was added at its "
    "end, painted red and white, and its lamp could be seen from 18 kilometres away. Today the harbour is "
    "used mainly by sailing clubs, and the lighthouse is a small museum open from April to October."
)
_BATTERY = (
    "Lithium-ion batteries age in two ways. Calendar ageing happens even when a battery is not used and "
    "is faster at high temperature and high charge. Cycle ageing comes from charging and discharging; deep "
    "cycles and fast charging wear the electrodes more than shallow, slow ones. Keeping a phone between 20 "
    "and 80 percent charge and away from heat slows both kinds of ageing."
)
_GARDEN = (
    "Community gardens in the city grew from 14 in 2015 to 52 in 2023. Each garden is run by volunteers "
    "who share tools, water and seeds. A survey of 600 gardeners found that 71 percent ate more vegetables "
    "since joining, and 64 percent said they knew more of their neighbours. The main problems reported "
    "were waiting lists, theft of produce and the cost of water in dry summers."
)
_TRAIN = (
    "Passengers with a regional pass may travel on all trains between Arlen and Boskov, except the express "
    "service that leaves at 07:15 on weekdays. Bicycles are allowed on every train after 09:30 and all day "
    "at weekends, but they must be placed in the marked carriage. Children under six travel free; children "
    "from six to fifteen pay half the adult fare. Tickets bought on board cost two euros more."
)
_RECIPE = (
    "To make the bread, mix 500 grams of flour, 10 grams of salt, 7 grams of dried yeast and 350 millilitres "
    "of warm water. Knead the dough for ten minutes until it is smooth, then leave it to rise for one hour "
    "in a warm place. Shape it into a loaf, let it rise for another 40 minutes, and bake it at 220 degrees "
    "for 30 to 35 minutes, until the bottom sounds hollow when tapped."
)
# The passages added with prompts 7-11: five to summarise, five to retrieve from.
_BEES = (
    "Researchers counted wild bees in 40 city parks over three summers. Parks that left part of their lawns "
    "unmown until July had almost twice as many bee species as parks mown every two weeks. The longer grass "
    "let clover, dandelions and other small flowers bloom, and bare patches of soil gave ground-nesting bees "
    "places to dig. Most visitors said the parks looked less tidy, but a clear majority still supported the "
    "change once signs explained the reason. The city now plans to leave a fifth of every park unmown each spring."
)
_GLACIER = (
    "Since 1950, surveyors have measured the front of the Vessa glacier every September by walking from a "
    "painted rock to the edge of the ice. In the first thirty years the glacier lost about four metres a year. "
    "Since 2000 the loss has averaged 22 metres a year, and in the hot summer of 2022 it was 61 metres. A lake "
    "has formed where the ice used to be, and the climbers' hut built beside the glacier in 1968 now stands far "
    "from it. The surveyors expect the lower tongue of the glacier to disappear within twenty years."
)
_FOUR_DAYS = (
    "A printing company with 85 employees tried a four-day week for six months, keeping pay the same. Teams "
    "agreed on which day each person would take off, so that the office stayed open five days a week. Managers "
    "cut most meetings to 25 minutes and moved routine updates to a shared document. At the end of the trial, "
    "output was slightly higher than in the same months of the previous year, sick days had fallen by a third, "
    "and two employees who had planned to leave decided to stay. The company has made the change permanent."
)
_FOOTBRIDGE = (
    "The council has closed the wooden footbridge over the River Teal after an inspection found rot in two of "
    "its main beams. Walkers and cyclists must use the road bridge 800 metres downstream, which adds about ten "
    "minutes to the walk into town. Repairs were first estimated at 90,000 pounds, but the engineers now "
    "recommend a new steel bridge, which would cost 240,000 pounds and last at least sixty years. A public "
    "meeting on the two options will be held at the town hall on 3 March."
)
_SHIPWRECK = (
    "Divers mapping the seabed off Porth Carrow have found the remains of a wooden ship in twelve metres of "
    "water. Its cargo included roof slates, clay pipes and a ship's bell dated 1796. Port records show that a "
    "cargo ship named the Margery sailed from a nearby harbour that year and was never heard of again. Shifting "
    "sand keeps uncovering and burying the wreck, so the divers are recording it with photographs and 3D scans "
    "rather than raising it. Some of the finds will be shown at the county museum next summer."
)
_RETURNS = (
    "You may return most items within 30 days of delivery for a full refund, as long as they are unused and in "
    "their original packaging. Shoes must be returned without signs of wear on the soles. Sale items can be "
    "exchanged for a different size but not refunded. Earrings, swimwear and gift cards cannot be returned. To "
    "start a return, use the link in your order email and we will send you a prepaid label. Refunds are paid to "
    "the original card within five working days of the parcel reaching our warehouse."
)
_CLINIC = (
    "The Elm Street dental clinic is open from 8:00 to 18:00 on weekdays and from 9:00 to 13:00 on Saturdays. "
    "Please arrive five minutes before your appointment. If you are more than fifteen minutes late, we may ask "
    "you to book a new appointment. Cancellations must be made at least 24 hours in advance, or a fee of 20 "
    "euros will be charged. For emergencies outside opening hours, call the regional dental line. Children "
    "under twelve must be accompanied by an adult."
)
_EBIKE = (
    "The Kestrel 2 electric bicycle weighs 19 kilograms, including its battery. The battery stores 500 "
    "watt-hours and takes about four and a half hours to charge from empty. On the lowest assistance level the "
    "range is up to 110 kilometres; on the highest, about 45 kilometres. The motor assists up to 25 kilometres "
    "per hour, and the bicycle has eight gears, hydraulic disc brakes and built-in lights. The frame comes in "
    "three sizes, for riders from 155 to 195 centimetres tall."
)
_MINUTES = (
    "Minutes of the school council meeting, 14 May. Present: eight pupils, two teachers and the head teacher. "
    "The council agreed to ask for water fountains on the top floor, as pupils there must walk down two floors "
    "to drink. A proposal to allow phones at lunch was discussed but not accepted; it will be raised again in "
    "September. The council voted to spend 300 pounds from its fund on board games for the library. Lena and "
    "Omar will write to the parents' association about a bicycle shelter. The next meeting is on 11 June."
)
_TRAIL = (
    "The Ridge Walk starts at the car park in Holm village and follows the yellow markers. The first section "
    "climbs steeply through woodland for two kilometres to the viewpoint at Crow Rock. From there the path "
    "follows the open ridge for five kilometres, with no shade and no water, to the old shepherds' hut at Brack "
    "Gap, where walkers can refill their bottles at a spring. The path then descends for three kilometres beside "
    "a stream back to Holm. Most walkers take four to five hours. Dogs must be kept on a lead from March to July."
)


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def _turns(*texts: str) -> list[dict]:
    """Alternating user / assistant messages ending with a user turn."""
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]


PROMPTS: dict[str, list[list[dict]]] = {
    "multi-turn": [
        _turns("I want to start running. How often should I run in the first month?",
               "Start with three short runs a week, with a rest day between them, and mix running with walking.",
               "Can you turn that into a simple weekly plan for the first two weeks?"),
        _turns("What is a good name for a small bakery in a seaside town?",
               "How about 'The Salty Crust' or 'Harbour Loaf'?",
               "I like Harbour Loaf. Write a short welcome message for its website."),
        _turns("Explain what a hash table is.",
               "A hash table stores key-value pairs and uses a hash function to find where each key lives.",
               "What happens when two keys have the same hash? Give an example."),
        _turns("I have chicken, rice, and some peppers. What can I cook?",
               "You could make a simple chicken and pepper fried rice.",
               "Great, list the steps, and tell me how long each one takes."),
        _turns("Why is the sky blue?",
               "Sunlight is scattered by the air, and blue light is scattered more than red light.",
               "Then why are sunsets red and orange?"),
        _turns("Help me write an email asking my manager for a day off next Friday.",
               "Sure. Do you want it to be formal or friendly?",
               "Friendly, and mention that my work for the week will be finished by Thursday."),
        _turns("My basil plant keeps wilting even though I water it every day. What am I doing wrong?",
               "Daily watering can drown basil: the soil should dry a little between waterings, and the pot needs drainage holes.",
               "The pot has no holes. How do I move the plant to a new pot without harming it?"),
        _turns("I am learning Italian and keep forgetting new words. Any tips?",
               "Try spaced repetition: review each word after one day, then after three days, then after a week.",
               "I am visiting Rome in two months. Which twenty words or phrases should I learn first?"),
        _turns("What does git rebase do?",
               "It replays your commits on top of another branch, as if you had started your work from its latest commit.",
               "When should I merge instead, and why do people say never to rebase a shared branch?"),
        _turns("I want to save 1,200 pounds for a holiday in ten months. Is that realistic?",
               "Yes: that is 120 pounds a month, or about 28 pounds a week.",
               "I buy a takeaway coffee every weekday. Show me how much of the goal cutting that in half would cover."),
        _turns("My daughter asked why the Moon changes shape. How can I explain it simply?",
               "You could say the Moon itself does not change: we see more or less of its sunlit half as it travels around the Earth.",
               "Can you suggest a small experiment with a lamp and a ball that we can do at home?"),
    ],
    "translation": [
        _user("Translate into French: The train to the airport leaves every twenty minutes from platform four."),
        _user("Translate into Spanish: Please remember to close the windows before you leave the office tonight."),
        _user("Translate into German: The museum is closed on Mondays, but the garden is open every day."),
        _user("Translate into French: My sister has been learning to play the piano for three years."),
        _user("Translate into Spanish: We booked a small hotel near the beach for the first week of August."),
        _user("Translate into German: The doctor said I should drink more water and sleep at least seven hours."),
        _user("Translate into Italian: The bakery on the corner sells fresh bread every morning until ten o'clock."),
        _user("Translate into Portuguese: If it rains tomorrow, the football match will be moved to Sunday afternoon."),
        _user("Translate into Dutch: Read the instructions carefully and charge the battery fully before you use the camera."),
        _user("Translate into German: Our neighbours planted three apple trees, and this autumn they gave us a basket of apples."),
        _user("Translate into Spanish: The meeting has been postponed because half of the team is travelling to a conference."),
    ],
    "summarisation": [
        _user("Summarise the following text in two sentences:\n\n" + _HARBOUR),
        _user("Summarise the following text in two sentences:\n\n" + _BATTERY),
        _user("Summarise the following text in two sentences:\n\n" + _GARDEN),
        _user("Summarise the following text in one sentence:\n\n" + _TRAIN),
        _user("Summarise the following text in one sentence:\n\n" + _RECIPE),
        _user("Summarise the following text for a child:\n\n" + _LIBRARY),
        _user("Summarise the following text in two sentences:\n\n" + _BEES),
        _user("Summarise the following text in one sentence:\n\n" + _GLACIER),
        _user("Summarise the following text as three short bullet points:\n\n" + _FOUR_DAYS),
        _user("Write a headline and a one-sentence summary for the following text:\n\n" + _FOOTBRIDGE),
        _user("Summarise the following text for a child:\n\n" + _SHIPWRECK),
    ],
    "qa": [
        _user("What causes the seasons on Earth?"),
        _user("How does a refrigerator keep food cold?"),
        _user("What is the difference between a virus and a bacterium?"),
        _user("Why do we need to sleep?"),
        _user("How do vaccines train the immune system?"),
        _user("What is inflation, and why does it happen?"),
        _user("How do noise-cancelling headphones work?"),
        _user("Why does bread go stale?"),
        _user("What was the Silk Road, and why was it important?"),
        _user("How do plants know which way is up?"),
        _user("Why do some people need glasses to see clearly?"),
    ],
    "math": [
        _user("Solve step by step: A shop sells pens at 3 dollars each. Tom buys 7 pens and pays with a 50 dollar note. How much change does he get?"),
        _user("Solve step by step: A train travels 180 kilometres in 2 hours and 15 minutes. What is its average speed in kilometres per hour?"),
        _user("Solve step by step: Anna has twice as many apples as Ben. Together they have 36 apples. How many apples does each have?"),
        _user("Solve step by step: A rectangle is 12 centimetres long and 5 centimetres wide. What are its area and its perimeter?"),
        _user("Solve step by step: A jacket costs 80 dollars. It is reduced by 25 percent. What is the new price?"),
        _user("Solve step by step: What is the sum of all whole numbers from 1 to 20?"),
        _user("Solve step by step: A bag holds 4 red, 5 blue and 3 green marbles. One marble is drawn at random. What is the probability that it is not blue?"),
        _user("Solve step by step: One tap fills a tank in 6 hours and another fills it in 3 hours. How long do they take to fill it together?"),
        _user("Solve step by step: A savings account pays 5 percent interest, added at the end of each year. What are 2,000 dollars worth after 3 years?"),
        _user("Solve step by step: A round pond has a diameter of 14 metres. Taking pi as 22/7, what are its circumference and its area?"),
        _user("Solve step by step: Maria read 1/4 of a 240-page book on Monday and 1/3 of it on Tuesday. How many pages are left?"),
    ],
    "retrieval": [
        _user("Repeat the following text exactly, but replace Tuesday with Friday:\n\n" + _LIBRARY),
        _user(_HARBOUR + "\n\nQuote the sentence that says when the lighthouse was added, then the sentence about its use today."),
        _user(_TRAIN + "\n\nUsing only the text above, what are the rules for bicycles and for children?"),
        _user(_RECIPE + "\n\nCopy the recipe above, but for half the amount of bread."),
        _user(_BATTERY + "\n\nUsing only the text above, explain the two ways batteries age."),
        _user(_GARDEN + "\n\nList every number in the text above with what it refers to."),
        _user(_RETURNS + "\n\nUsing only the text above, can I return shoes that I wore once outside, 20 days after delivery? Explain."),
        _user(_CLINIC + "\n\nQuote the sentences that say what happens if a patient is late or cancels."),
        _user(_EBIKE + "\n\nRewrite the description above as a table with two columns: feature and value."),
        _user("Repeat the following minutes exactly, but replace every 'council' with 'committee':\n\n" + _MINUTES),
        _user(_TRAIL + "\n\nUsing only the text above, how long is the whole walk, and where can walkers get water?"),
    ],
}
