"""What each language's fixture under ``tests/fixtures/langs`` must give (here the typed ones;
shell, scripting and functional ones in ``language_specs_scripting``): its definitions by
kind and qualified name, one class skeleton, the references one block captures, and searches
by a definition's name that must find that definition first (``test_language_defs``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Spec:
    file: str
    language: str
    defs: list[tuple[str, str]]  # (kind, qualified name) blocks that must exist
    # (class name, lines its skeleton holds, text it must not hold: a collapsed body)
    skeleton: tuple[str, list[str], list[str]] | None = None
    refs: tuple[str, set[str]] | None = None  # (block name, names it references)
    # (query, qualified name the first hit must be): a definition's name as words
    searches: list[tuple[str, str]] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # names that must not be definitions
    doc: tuple[str, str] | None = None  # (block name, words of its doc comment)


TYPED = [
    Spec(
        "Sample.cs",
        "csharp",
        defs=[
            ("class", "ICarrierSelector"),
            ("method", "ICarrierSelector.Choose"),
            ("class", "Parcel"),
            ("class", "CarrierKind"),
            ("type", "RateFunction"),
            ("class", "CheapestCarrierSelector"),
            ("method", "CheapestCarrierSelector.Choose"),
            ("method", "CheapestCarrierSelector.CarrierCount"),
            ("class", "Carrier"),
            ("method", "Carrier.SurchargeFor"),
        ],
        skeleton=(
            "CheapestCarrierSelector",
            ["public class CheapestCarrierSelector : ICarrierSelector", "{ ... }"],
            ["OrderBy"],
        ),
        refs=("CheapestCarrierSelector.Choose", {"Quote", "OrderBy", "Parcel"}),
        searches=[
            ("cheapest carrier selector", "CheapestCarrierSelector"),
            ("surcharge for", "Carrier.SurchargeFor"),
            ("carrier kind", "CarrierKind"),
            ("rate function", "RateFunction"),
        ],
        absent=["Carrier.Name"],  # an auto-property is a field
        doc=("ICarrierSelector", "Picks the carrier that ships"),  # <summary> left out
    ),
    Spec(
        "Sample.php",
        "php",
        defs=[
            ("class", "Borrowable"),
            ("method", "Borrowable.loanPeriodDays"),
            ("class", "TracksLateFees"),
            ("method", "TracksLateFees.lateFeeCents"),
            ("class", "LoanState"),
            ("class", "LoanDesk"),
            ("method", "LoanDesk.__construct"),
            ("method", "LoanDesk.checkIn"),
            ("function", "renewal_allowed"),
        ],
        skeleton=(
            "LoanDesk",
            ["use TracksLateFees;", "public function checkIn(Loan $loan): Receipt"],
            ["markReturned"],
        ),
        refs=(
            "LoanDesk.checkIn",
            {"daysBetween", "markReturned", "Receipt", "Loan", "lateFeeCents"},
        ),
        searches=[
            ("late fee cents", "TracksLateFees.lateFeeCents"),
            ("renewal allowed", "renewal_allowed"),
            ("loan desk check in", "LoanDesk.checkIn"),
            ("loan state", "LoanState"),
        ],
        doc=("Borrowable", "Anything a member can borrow."),
    ),
    Spec(
        "Sample.kt",
        "kotlin",
        defs=[
            ("class", "WateringPlan"),
            ("method", "WateringPlan.durationFor"),
            ("class", "Zone"),
            ("class", "Season"),
            ("type", "ZoneId"),
            ("class", "MoistureBasedPlan"),
            ("method", "MoistureBasedPlan.durationFor"),
            ("method", "MoistureBasedPlan.rainFactor"),
            ("method", "MoistureBasedPlan.forClimate"),  # a companion's: the class's
            ("class", "ValveController"),
            ("method", "ValveController.openValve"),
            ("function", "Zone.needsWater"),  # an extension function, by its receiver
        ],
        skeleton=(
            "MoistureBasedPlan",
            [
                "override fun durationFor(zone: Zone): Duration { ... }",
                "private fun rainFactor(): Double = 1.0 - forecast.chanceOfRain()",
            ],
            ["coerceAtLeast"],
        ),
        refs=("MoistureBasedPlan.durationFor", {"rainFactor", "ofMinutes", "Zone", "Duration"}),
        searches=[
            ("open valve", "ValveController.openValve"),
            ("needs water", "Zone.needsWater"),
            ("moisture based plan duration for", "MoistureBasedPlan.durationFor"),
            ("watering plan", "WateringPlan"),
        ],
        doc=(
            "WateringPlan",
            "how long each zone",
        ),  # after the imports: inside them, to this grammar
    ),
    Spec(
        "Sample.swift",
        "swift",
        defs=[
            ("class", "Brewing"),
            ("method", "Brewing.brew"),
            ("class", "BrewError"),
            ("class", "Recipe"),
            ("method", "Recipe.strengthRatio"),  # a computed property
            ("type", "BrewCompletion"),
            ("class", "EspressoMachine"),
            ("method", "EspressoMachine.init"),
            ("method", "EspressoMachine.brew"),
            ("method", "EspressoMachine.descale"),  # in an extension of the class
            ("function", "defaultRecipe"),
        ],
        skeleton=(
            "EspressoMachine",
            [
                "final class EspressoMachine: Brewing {",
                "init(boiler: Boiler, beans: Double) { ... }",
                "func brew(_ recipe: Recipe) throws -> Cup { ... }",
            ],
            ["outOfBeans"],
        ),
        refs=("EspressoMachine.brew", {"heat", "Cup", "Recipe", "BrewError"}),
        searches=[
            ("descale every shots", "EspressoMachine.descale"),
            ("default recipe", "defaultRecipe"),
            ("strength ratio", "Recipe.strengthRatio"),
            ("brew completion", "BrewCompletion"),
        ],
        doc=("Brewing", "brew a drink"),
    ),
    Spec(
        "Sample.scala",
        "scala",
        defs=[
            ("class", "Mount"),
            ("method", "Mount.slewTo"),
            ("class", "Coordinates"),
            ("class", "Filter"),
            ("class", "Filter.HydrogenAlpha"),
            ("method", "Filter.byName"),
            ("class", "EquatorialMount"),
            ("method", "EquatorialMount.slewTo"),
            ("method", "EquatorialMount.parked"),
            ("type", "ExposureSeconds"),
            ("class", "Seeing"),  # Scala 3: an indented body
            ("method", "Seeing.acceptableForImaging"),
        ],
        skeleton=(
            "EquatorialMount",
            [
                "override def slewTo(target: Coordinates): Duration = { ... }",
                "override def parked: Boolean = position.declination == 90.0",
            ],
            ["stepsBetween"],
        ),
        refs=("EquatorialMount.slewTo", {"stepsBetween", "run", "Coordinates", "Duration"}),
        searches=[
            ("equatorial mount slew to", "EquatorialMount.slewTo"),
            ("filter by name", "Filter.byName"),
            ("acceptable for imaging", "Seeing.acceptableForImaging"),
            ("exposure seconds", "ExposureSeconds"),
        ],
        doc=("Mount", "Points a telescope"),
    ),
    Spec(
        "Sample.mm",
        "objc",
        defs=[
            ("class", "ReadingList"),  # the @interface, and the @implementation below it
            ("method", "ReadingList.addTitle"),
            ("method", "ReadingList.nextUnreadTitle"),
            ("function", "shelf_count"),
        ],
        skeleton=("ReadingList", ["- (void)addTitle:(NSString *)title;"], []),
        refs=("ReadingList.addTitle", {"containsObject", "addObject"}),
        searches=[
            ("next unread title", "ReadingList.nextUnreadTitle"),
            ("shelf count", "shelf_count"),
        ],
        doc=("ReadingList", "Keeps a reading list"),
    ),
]
