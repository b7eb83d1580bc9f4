"""The long-prompt corpus: 33 passages about an imaginary market town, written for this project.

Input length changes what speculation buys (a longer context makes each target pass dearer
and gives prompt lookup more to copy from), so the benchmark needs prompts of about 128,
1024 and 4096 tokens made of real prose: random tokens or one passage repeated would hand
a draft an unnaturally easy (or hard) text.  These passages are sections of the almanac of
Wendle Cross, a fictional market town - a town report, a field guide and a technical manual
in one - each about a different subject, about 4,000 words in all, so a 4096-token prompt is
built from consecutive passages without repeating any.  The town, its people and its numbers
are invented; the texts are original to this project.

Each passage carries a retrieval question answerable from its first two sentences, so a
prompt that starts with the passage can ask it at any length (:func:`specdec.workload.prompts.length_prompts`).
Sentences end in ". " with no abbreviations inside them: the prompt builder splits on that.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    subject: str   # what the passage is about, one line
    text: str      # the prose, about 110-140 words
    question: str  # a retrieval question answered by its first two sentences


PASSAGES: tuple[Passage, ...] = (
    Passage("the water supply", (
        "Wendle Cross takes its drinking water from two boreholes on Fallow Hill, each about ninety metres deep. "
        "The water is pumped to a covered reservoir at the top of the hill, which holds enough for three days of normal use. "
        "From there it flows down to the town by gravity, so the supply keeps running for a while even during a power cut. "
        "The water is hard, because it passes through chalk, and most households notice white scale in their kettles within a few weeks. "
        "The water board tests samples every morning and publishes a summary each quarter in the library and at the post office. "
        "Leaks in the older cast-iron mains remain the largest source of waste, and about two kilometres of pipe are replaced every year."),
        "Quote the sentence that says how deep the boreholes on Fallow Hill are."),
    Passage("the Saturday market", (
        "The Saturday market has been held in the square of Wendle Cross since at least 1612, when a charter allowed the town to charge a penny for each stall. "
        "Today there are usually between forty and fifty stalls, and the fee is eleven pounds for a pitch three metres wide. "
        "Farmers from the valley sell eggs, cheese, vegetables and meat, and in autumn several orchards bring apples and pressed juice. "
        "A rule that at least half of the stalls must sell food grown or made within thirty miles has kept the market from filling with cheap imported goods. "
        "Traders set up from six in the morning, and the square must be swept and empty by four in the afternoon. "
        "In winter the market moves under the arches of the corn exchange."),
        "Quote the sentence that gives the year of the market charter."),
    Passage("the fire station", (
        "The fire station on Mill Lane is staffed by retained firefighters, who have ordinary jobs in the town and carry pagers while on call. "
        "When the pager sounds, they must reach the station within five minutes, which is why most of them live or work within a mile of it. "
        "The crew of twelve shares one fire engine and a smaller vehicle for narrow lanes and grass fires. "
        "Last year they answered 164 calls: about a third were fires, a third were road accidents, and the rest ranged from flooded cellars to a horse stuck in a ditch. "
        "Training takes place every Tuesday evening, and the station holds an open day each June when children may sit in the cab and try the hose."),
        "Quote the sentence that says how quickly the firefighters must reach the station."),
    Passage("the grey heron", (
        "The grey heron is the tallest bird regularly seen along the River Wendle, standing almost a metre high. "
        "It hunts by waiting without moving in shallow water, sometimes for many minutes, before striking at a fish or frog with its long yellow bill. "
        "In flight it folds its neck back into its shoulders and trails its legs, which makes it easy to tell apart from cranes and storks at a distance. "
        "Herons nest in colonies at the tops of tall trees, and the heronry in Ashby Wood has held between fifteen and twenty-five nests for as long as records have been kept. "
        "Birds return to the colony in February, and the young leave the nest in early summer."),
        "Quote the sentence that describes how the heron hunts."),
    Passage("hedgerows", (
        "The hedgerows around Wendle Cross are among the oldest features of the landscape, and some follow boundaries drawn more than six hundred years ago. "
        "A rough way to guess the age of a hedge is to count the woody species in a thirty-metre stretch and allow about a century for each one. "
        "Hawthorn and blackthorn form the backbone of most hedges, with hazel, field maple, holly and dog rose mixed in. "
        "In spring the blackthorn flowers before its leaves appear, covering the hedges in white. "
        "Farmers are encouraged to cut hedges only every second or third winter, so that berries remain for birds and next year's flowers are not lost. "
        "A well-kept hedge can shelter more than thirty kinds of nesting bird."),
        "Quote the sentence that explains how to guess the age of a hedge."),
    Passage("adjusting bicycle brakes", (
        "Before adjusting the brakes of a bicycle, check that the wheels are straight and spin freely, because a buckled rim will rub whatever you do. "
        "For rim brakes, the pads should meet the rim squarely, about one millimetre below its top edge, and never touch the tyre. "
        "Squeeze the lever: it should stop well short of the handlebar, and if it does not, turn the barrel adjuster near the lever anticlockwise a few turns to take up slack in the cable. "
        "Pads worn down to the grooves must be replaced, and new pads should be fitted with the front edge slightly closer to the rim than the back. "
        "After any adjustment, test the brakes at walking pace before riding on a road."),
        "Quote the sentence that says what to check before adjusting the brakes."),
    Passage("boiler pressure", (
        "The heating boiler in most houses on the new estate is a sealed system, and its pressure gauge should read between one and one and a half bar when the heating is cold. "
        "If the pressure falls below one bar, the boiler may stop working and show a fault code on its display. "
        "To refill the system, find the filling loop, a short braided hose with a tap at each end under the boiler, and open both taps slowly while watching the gauge. "
        "Close them when the needle reaches one and a half bar. "
        "If the pressure drops again within a few days, there is probably a leak, often at a radiator valve, and a qualified engineer should inspect the system. "
        "Never open the filling loop while the boiler is hot."),
        "Quote the sentence that gives the correct boiler pressure when the heating is cold."),
    Passage("the history of the school", (
        "The first school in Wendle Cross opened in 1839 in a single room above the saddler's shop, with one teacher and about forty children of all ages. "
        "Pupils paid a penny a week, and many left at the age of ten to work on farms or in the tannery. "
        "A purpose-built school on Church Street followed in 1872, paid for partly by a bequest from a local grain merchant. "
        "Its bell tower still stands, though the building is now a community centre. "
        "The present primary school, on the edge of the playing fields, opened in 1968 and has about 260 pupils. "
        "Its oldest surviving register, kept in the county archive, records attendance falling sharply every September during the potato harvest."),
        "Quote the sentence that says where the first school opened."),
    Passage("the weather records", (
        "A volunteer has kept daily weather records in the garden of the old vicarage since 1921, making them one of the longest unbroken series in the county. "
        "Each morning at nine she reads the rain gauge and the maximum and minimum thermometers, and notes the cloud and the wind. "
        "The wettest day on record brought 94 millimetres of rain in August 1952, when the river flooded the lower streets. "
        "The coldest night was in January 1963, at minus seventeen degrees. "
        "Over the century the average date of the last spring frost has moved about two weeks earlier, and the number of days with snow lying has halved. "
        "The records are typed into a spreadsheet each month and shared with the national weather service."),
        "Quote the sentence that says since when and where the daily weather records have been kept."),
    Passage("the number 42 bus", (
        "The number 42 bus links Wendle Cross with the railway station at Harlby, eleven miles to the east. "
        "Buses leave the square every hour from twenty to seven in the morning until twenty to eight in the evening on weekdays, and every two hours on Saturdays. "
        "The journey takes about thirty-five minutes, longer on market days when the square is crowded. "
        "Most trips are timed to meet trains to the city, but the last bus does not wait if a train is late, a common complaint at parish meetings. "
        "Holders of a senior pass travel free after half past nine. "
        "The parish council is asking the county for an evening bus on Fridays, arguing that young people who work in Harlby cannot otherwise get home."),
        "Quote the sentence that names the two places the number 42 bus connects."),
    Passage("autumn fungi", (
        "Autumn brings dozens of kinds of fungi to the beech woods on the north side of the valley. "
        "The most noticeable is the fly agaric, with its bright red cap covered in white spots, which grows beside birch trees rather than beech. "
        "Shaggy ink caps appear on disturbed ground and road verges, their tall white caps turning to black liquid within a day or two of opening. "
        "Beefsteak fungus grows from the trunks of old oaks and really does look like raw meat when cut. "
        "Foragers should remember that several deadly species resemble edible ones, and nothing should be eaten unless an expert has identified it with certainty. "
        "Picking is not allowed in the nature reserve at all."),
        "Quote the sentence that describes the fly agaric."),
    Passage("sharpening a knife", (
        "To sharpen a kitchen knife on a whetstone, first soak the stone in water for about ten minutes, until no more bubbles rise from it. "
        "Place the stone on a damp towel so that it cannot slide, coarse side up. "
        "Hold the knife with the edge facing away from you at an angle of about fifteen degrees, roughly the height of two stacked coins under the spine. "
        "Push the blade across the stone from heel to tip in smooth strokes, keeping the angle steady, until you can feel a small burr along the other side of the edge. "
        "Then repeat on the other side, turn the stone over to its fine side, and finish with lighter strokes. "
        "Rinse and dry the knife before putting it away."),
        "Quote the sentence that says how long to soak the whetstone."),
    Passage("the tannery", (
        "For almost two centuries the largest employer in Wendle Cross was the tannery beside the river, which turned cattle hides into leather for boots, saddles and belts. "
        "The process took months: hides were soaked in lime to loosen the hair, scraped by hand, and then left in pits of oak bark and water that grew stronger as the weeks passed. "
        "The smell was famous, and older residents still remember that washing hung out on the east side of town had to be brought in when the wind turned. "
        "The tannery closed in 1971, when cheaper leather came from abroad. "
        "Its brick drying sheds were converted into flats in the 1990s, and the pits now lie under a car park."),
        "Quote the sentence that says what the tannery made from cattle hides."),
    Passage("bats", (
        "Seven species of bat have been recorded in the parish, most of them roosting in old buildings and hollow trees. "
        "The common pipistrelle, small enough to fit in a matchbox, is the one most people see darting around street lamps on summer evenings. "
        "Daubenton's bats hunt low over the mill pond, taking insects from just above the surface of the water. "
        "All bats and their roosts are protected by law, so any work on a roof where bats live needs advice from a licensed surveyor first. "
        "The local bat group runs evening walks in July and August, lending out detectors that turn the animals' high calls into clicks and chirps that people can hear."),
        "Quote the sentence that says how many species of bat have been recorded in the parish."),
    Passage("the cinema", (
        "The Regal cinema on Bridge Street opened in 1936 with a single screen, a balcony and seats for six hundred people. "
        "By the 1980s audiences had dwindled, and the building was used for bingo for nearly twenty years. "
        "In 2009 a group of residents formed a charity, raised money through concerts and sponsored walks, and reopened it with two smaller screens and a cafe in the old foyer. "
        "Volunteers now sell tickets and run the projectors, while one paid manager handles the bookings. "
        "On the first Sunday of each month the cinema holds a relaxed screening with the lights half up, for families with young children or anyone who finds a dark room difficult."),
        "Quote the sentence that gives the year the Regal opened and how many people it seated."),
    Passage("solar panels", (
        "Solar panels on a south-facing roof in this region produce most of their energy between late morning and mid-afternoon, and roughly four times as much in June as in December. "
        "The panels make direct current, which an inverter converts to the alternating current used in the house. "
        "A display on the inverter shows how much power is being produced at each moment and the total for the day. "
        "Panels need little maintenance: rain washes off most dust, although a build-up of moss or bird droppings can reduce output noticeably. "
        "If the daily total drops sharply on a sunny day, check the inverter for a warning light before calling an installer. "
        "Never climb onto the roof to clean the panels yourself."),
        "Quote the sentence that compares the energy the panels produce in June and in December."),
    Passage("otters", (
        "Otters returned to the River Wendle in about 2005 after an absence of more than forty years, once the river had been cleaned up and the pesticides that poisoned them had been banned. "
        "They are rarely seen, as they are mostly active at dusk and at night, but their signs are easy to find. "
        "Look for webbed footprints with five toes in soft mud, and for droppings, called spraints, left on prominent stones or under bridges. "
        "Fresh spraints have a surprisingly sweet smell, often compared to jasmine tea. "
        "A single otter may range along fifteen kilometres of river, so the two or three animals thought to live in the parish almost certainly travel beyond it."),
        "Quote the sentence that says when otters returned to the River Wendle."),
    Passage("the church bells", (
        "The tower of Saint Aldhelm's church holds eight bells, the oldest cast in 1590 and the heaviest weighing almost a tonne. "
        "They are rung by a team of ringers standing in a room below the bells, each pulling a rope that swings one bell through a full circle. "
        "Rather than playing tunes, ringers work through mathematical patterns called methods, in which the order of the bells changes with every pull. "
        "A full peal of more than five thousand changes takes about three hours without a break. "
        "The band practises on Thursday evenings and rings before the main service on Sundays. "
        "New learners are welcome from the age of eleven, and most can ring safely on their own after a few months."),
        "Quote the sentence that gives the number of bells and the year the oldest was cast."),
    Passage("setting up a wireless router", (
        "When setting up a new wireless router, first connect it to the broadband socket with the cable supplied and wait until the status light stays steady, which can take up to ten minutes. "
        "The network name and the default password are printed on a label on the back or base of the router. "
        "Change the administrator password as soon as you log in for the first time, because default passwords are widely known. "
        "Place the router in a central spot, off the floor and away from thick walls, metal cabinets and fish tanks, since water and metal block the signal. "
        "If some rooms still have a weak connection, a second access point or a mesh unit will usually help more than moving the router again."),
        "Quote the sentence that says how long to wait for the router's status light."),
    Passage("the chalk and flint", (
        "The valley of the Wendle is cut into chalk, a soft white rock made of the skeletons of tiny sea creatures that settled on the floor of a warm sea about ninety million years ago. "
        "Bands of flint run through the chalk, and the older cottages of the town are built from flint set in lime mortar, with brick at the corners and around the windows. "
        "Fossil sea urchins are common in the fields after ploughing, and local children were once told they were fairy loaves. "
        "Because chalk lets water soak through, the streams on the hillsides vanish in dry summers, and some springs only flow after a wet winter. "
        "These seasonal streams are known locally as winterbournes."),
        "Quote the sentence that explains what chalk is made of."),
    Passage("the flower show", (
        "The Wendle Cross flower and produce show has been held on the second Saturday of August since 1887, apart from the war years. "
        "Entries are judged in the village hall in the morning, and the doors open to the public at two in the afternoon. "
        "Classes range from the longest runner bean and the heaviest marrow to jars of jam, photographs and miniature gardens that children make in a seed tray. "
        "Judges are brought in from other villages so that no one can be accused of favouring a neighbour. "
        "The most coveted prize, a silver cup for the best collection of vegetables, has been won by the same family eleven times. "
        "Prize money is small, usually less than a pound per class."),
        "Quote the sentence that says on which day the flower show is held."),
    Passage("treating a minor burn", (
        "For a minor burn, the most important step is to cool the skin under cool or lukewarm running water for twenty minutes, as soon as possible after the injury. "
        "Do not use ice, iced water or butter, which can damage the skin further. "
        "Remove rings, watches or clothing near the burn unless they are stuck to the skin. "
        "Once cooled, cover the burn loosely with cling film or a clean plastic bag, which protects it without sticking. "
        "Seek medical help for burns larger than the patient's hand, for any burn on the face, hands or feet, for burns that look white or charred, and for all burns to young children."),
        "Quote the sentence that says how long to cool a minor burn."),
    Passage("the canal", (
        "The Wendle Navigation, a canal linking the town with the tidal river at Osbury, opened in 1794 to carry grain down the valley and coal back up it. "
        "It was twenty-two kilometres long and climbed through fourteen locks, eight of them in a flight below Fallow Hill. "
        "Horses towed the narrow boats along a path beside the water, and a loaded boat took a full day for the journey. "
        "The railway reached the town in 1851, and the canal trade collapsed within twenty years. "
        "After decades of neglect, volunteers began clearing the channel in 1978, and the lower nine kilometres are now open again to small boats, canoes and walkers on the towpath."),
        "Quote the sentence that says when the canal opened and what it carried."),
    Passage("the churchyard yew", (
        "The yew in the churchyard of Saint Aldhelm's is thought to be more than a thousand years old, older than the church itself. "
        "Its trunk is hollow and measures nearly nine metres around, and its lower branches rest on wooden props fitted in the nineteenth century. "
        "Almost every part of a yew is poisonous, including the leaves and seeds, but the red flesh around each seed is not, and birds eat it without harm. "
        "Yews grow slowly and can regrow from old wood, which is why they were planted in hedges and cut into shapes in formal gardens. "
        "Their wood is strong and springy, and was once prized for longbows. "
        "A cutting from the churchyard tree was planted on the village green in 2000 to mark the new millennium."),
        "Quote the sentence that gives the estimated age of the churchyard yew."),
    Passage("household waste", (
        "Household waste in the district is collected on a two-week cycle. "
        "General rubbish goes in the black bin, collected every other week, while the green bin for paper, cans, glass and plastic bottles is collected in the weeks between. "
        "Food waste goes into a small grey caddy, which is emptied every week so that it does not smell. "
        "Garden waste is collected only from households that pay an annual fee. "
        "Batteries should never go in any bin, since they can start fires in collection lorries; they can be left in a bag on top of the grey caddy instead. "
        "Since the caddies were introduced, the amount of general rubbish has fallen by almost a quarter."),
        "Quote the sentence that says how often the black bin is collected."),
    Passage("car tyres", (
        "Check the pressure of your car's tyres at least once a month, and always before a long journey, while the tyres are cold. "
        "The correct pressures are listed in the handbook and usually on a sticker inside the driver's door or the fuel flap, and they are often higher when the car is fully loaded. "
        "Under-inflated tyres wear faster at the edges, increase fuel use and make the car less stable when braking. "
        "The legal minimum tread depth is one and six tenths of a millimetre across the central three quarters of the tyre, but braking distances in the wet grow noticeably below three millimetres. "
        "Look for cuts, bulges or nails in the sidewalls as well, and have any damage checked at a tyre shop."),
        "Quote the sentence that says how often to check the tyre pressure."),
    Passage("the football club", (
        "Wendle Cross Rovers were founded in 1894 by workers from the tannery and play on the recreation ground beside the river. "
        "The club's greatest success came in 1957, when it reached the final of the county cup and lost by a single goal in front of three thousand spectators. "
        "Today the club runs eleven teams, including four for girls and women and a walking football group for players over fifty. "
        "Every team is run by volunteers, who also mark out the pitches and staff the tea hut. "
        "The ground floods most winters, and the club has raised money for a drainage scheme that should let play continue after heavy rain."),
        "Quote the sentence that says when the football club was founded and by whom."),
    Passage("dark skies", (
        "Away from the street lamps of the town, the hills above Wendle Cross have some of the darkest skies in the south of the county. "
        "On a clear, moonless night the Milky Way can be seen as a pale band across the sky, and thousands of stars are visible without a telescope. "
        "The local astronomy society meets at the cricket pavilion on the first Friday of each month, and in winter it sets up telescopes on the hill for anyone who wants to look. "
        "Members ask visitors to bring red torches rather than white ones, since the eyes take twenty minutes or more to recover from white light. "
        "The parish council has agreed to fit shielded lamps that point downward when the old street lights are replaced."),
        "Quote the sentence that says what can be seen on a clear, moonless night."),
    Passage("keeping hens", (
        "Keeping a few hens in the garden needs a secure coop with a nest box, a perch raised off the floor, and a run with at least a square metre of space for each bird. "
        "Foxes are the greatest danger, so the run should be covered, its wire buried about thirty centimetres into the ground, and the hens shut in every night. "
        "Hens lay best with about fourteen hours of daylight, so most stop laying for a while in winter and during their annual moult. "
        "Feed layers' pellets as the main diet, with grit to help digestion and oyster shell for strong eggshells. "
        "Clean the coop every week, and check the birds for mites, which hide in cracks in the woodwork by day."),
        "Quote the sentence that lists what a coop and run for hens need."),
    Passage("the local cheese", (
        "Wendle Blue is a soft blue cheese made at Hollin Farm from the milk of the farm's own herd of about ninety cows. "
        "The recipe was developed in 1998 by the farmer's daughter after a course in cheesemaking, and the cheese is now sold in shops across the region. "
        "Each cheese is pierced with steel needles after two weeks, letting air reach the inside so that the blue mould can grow along the channels. "
        "The cheeses mature for eight to ten weeks in a cool room kept at about ninety percent humidity. "
        "The farm shop sells misshapen cheeses at a discount, and visitors can watch the morning's milk being turned into curd through a window in the dairy."),
        "Quote the sentence that says where Wendle Blue is made and from whose milk."),
    Passage("seasoning a cast-iron pan", (
        "A cast-iron pan is protected by seasoning, a thin layer of oil that has been heated until it bonds to the metal and forms a hard, slightly glossy coating. "
        "To season a new or rusty pan, scrub it clean, dry it completely over a low flame, then rub a very thin film of cooking oil over every surface and wipe off as much as you can. "
        "Bake it upside down in a hot oven for an hour and let it cool inside. "
        "Repeating this three or four times gives a good base layer. "
        "After cooking, wash the pan with hot water and a brush, dry it on the hob, and wipe in a drop of oil. "
        "Do not leave it to soak, which invites rust."),
        "Quote the sentence that explains what seasoning is."),
    Passage("the flood plan", (
        "Because the lower streets of Wendle Cross lie on the river's floodplain, the town has a flood plan run by a group of trained volunteers. "
        "When the river gauge at Mill Bridge passes two metres, the volunteers are alerted by text message and begin checking on elderly and disabled residents in the streets at risk. "
        "Sandbags are stored in a locked container behind the fire station, and each household on the list can collect up to ten. "
        "If the water reaches the top of the gauge, the village hall opens as a rest centre with blankets, hot drinks and camp beds. "
        "The group meets twice a year to practise, and new volunteers are given a short course in first aid and in using a radio."),
        "Quote the sentence that says what happens when the river gauge at Mill Bridge passes two metres."),
    Passage("dialect words", (
        "Older residents of the valley still use a handful of dialect words that visitors rarely understand. "
        "A narrow path between two houses is a twitten, and to be mardy is to be sulky or bad-tempered. "
        "Rain that falls in very fine drops is called mizzle, a mixture of mist and drizzle. "
        "Many of these words appear in a glossary compiled in 1911 by the schoolmaster, who asked each of his pupils to collect the words used at home. "
        "A local history group has recorded interviews with twenty people born before 1940, and the recordings, with written transcripts, can be borrowed from the library."),
        "Quote the sentence that explains what a twitten is."),
)
