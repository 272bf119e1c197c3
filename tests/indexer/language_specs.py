"""What each language's fixture under ``tests/fixtures/langs`` must give: its definitions by
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


SPECS = [
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
        doc=("CheapestCarrierSelector.Choose", "keep the cheapest"),
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
        "sample.sh",
        "bash",
        defs=[
            ("function", "log_line"),
            ("function", "prune_snapshots"),  # the ``function name`` form
            ("function", "upload_snapshot"),
            ("function", "main"),
        ],
        refs=("main", {"upload_snapshot", "prune_snapshots", "pg_dump"}),
        searches=[
            ("prune snapshots", "prune_snapshots"),
            ("upload snapshot", "upload_snapshot"),
            ("log line", "log_line"),
        ],
        doc=("prune_snapshots", "Remove all but the newest"),
    ),
    Spec(
        "sample.lua",
        "lua",
        defs=[
            ("function", "RateLimiter.new"),
            ("function", "RateLimiter.refill"),  # ``RateLimiter:refill``
            ("function", "RateLimiter.try_acquire"),
            ("function", "format_retry_after"),
            ("function", "RateLimiter.describe"),  # a function assigned to a field
        ],
        refs=("RateLimiter.try_acquire", {"refill"}),
        searches=[
            ("try acquire", "RateLimiter.try_acquire"),
            ("format retry after", "format_retry_after"),
            ("rate limiter refill", "RateLimiter.refill"),
        ],
        doc=("RateLimiter.new", "refilling `rate` tokens"),
    ),
    Spec(
        "sample.dart",
        "dart",
        defs=[
            ("class", "PlaylistRepository"),
            ("method", "PlaylistRepository.loadAll"),
            ("class", "RepeatMode"),
            ("type", "TrackFilter"),
            ("class", "Shuffling"),  # a mixin
            ("method", "Shuffling.shuffled"),
            ("class", "PlaylistController"),
            ("method", "PlaylistController.PlaylistController"),
            ("method", "PlaylistController.savedCount"),  # a getter
            ("method", "PlaylistController.addTrack"),
            ("class", "PlaylistDuration"),  # an extension
            ("method", "PlaylistDuration.totalDuration"),
            ("function", "crossfadeFor"),
        ],
        skeleton=(
            "PlaylistController",
            [
                "Future<Playlist> addTrack(Playlist playlist, Track track) async { ... }",
                "int get savedCount => _saved.length;",
            ],
            ["copyWith"],
        ),
        refs=("PlaylistController.addTrack", {"copyWith", "save", "contains", "Playlist"}),
        searches=[
            ("add track", "PlaylistController.addTrack"),
            ("crossfade for", "crossfadeFor"),
            ("total duration", "PlaylistDuration.totalDuration"),
            ("playlist repository", "PlaylistRepository"),
        ],
        doc=("PlaylistController.addTrack", "skipping ones already"),
    ),
    Spec(
        "sample.ex",
        "elixir",
        defs=[
            ("class", "Kitchen.OrderQueue"),
            ("method", "Kitchen.OrderQueue.enqueue"),
            ("method", "Kitchen.OrderQueue.next_ticket"),
            ("method", "Kitchen.OrderQueue.pop_order"),  # defp, one-line clauses
            ("method", "Kitchen.OrderQueue.is_late"),  # defguard
            ("class", "Kitchen.Priced"),  # defprotocol
            ("method", "Kitchen.Priced.price_cents"),
        ],
        skeleton=(
            "Kitchen.OrderQueue",
            ["def next_ticket(queue) ...", "alias Kitchen.{Order, Printer}"],
            ["Printer.ticket"],
        ),
        refs=("Kitchen.OrderQueue.next_ticket", {"pop_order", "ticket", "Printer"}),
        searches=[
            ("next ticket", "Kitchen.OrderQueue.next_ticket"),
            ("pop order", "Kitchen.OrderQueue.pop_order"),
            ("price cents", "Kitchen.Priced.price_cents"),
        ],
    ),
    Spec(
        "sample.zig",
        "zig",
        defs=[
            ("class", "WordCounter"),
            ("method", "WordCounter.init"),
            ("method", "WordCounter.countWords"),
            ("method", "WordCounter.deinit"),
            ("class", "Delimiter"),
            ("function", "isSeparator"),
        ],
        skeleton=(
            "WordCounter",
            ["pub fn countWords(self: *WordCounter, text: []const u8) !void { ... }"],
            ["tokenizeAny"],
        ),
        refs=("WordCounter.countWords", {"tokenizeAny", "getOrPut", "WordCounter"}),
        searches=[
            ("count words", "WordCounter.countWords"),
            ("is separator", "isSeparator"),
            ("word counter", "WordCounter"),
        ],
        doc=("isSeparator", "Whether a byte ends a word."),
    ),
    Spec(
        "Sample.hs",
        "haskell",
        defs=[
            ("class", "Forecast"),
            ("class", "Celsius"),
            ("type", "Week"),
            ("class", "Describable"),
            ("method", "Describable.describe"),  # in the instance
            ("function", "averageHigh"),  # two clauses, one definition
            ("function", "warmestDay"),
        ],
        skeleton=("Describable", ["class Describable a where", "describe :: a -> String"], []),
        refs=("warmestDay", {"maximumBy", "comparing", "Forecast"}),
        searches=[
            ("warmest day", "warmestDay"),
            ("average high", "averageHigh"),
        ],
        doc=("averageHigh", "The mean of the week's highs."),
    ),
    Spec(
        "Sample.pm",
        "perl",
        defs=[
            ("function", "new"),
            ("function", "receive_goods"),
            ("function", "stock_level"),
            ("function", "reorder_needed"),
        ],
        refs=("receive_goods", {"stock_level"}),
        searches=[
            ("receive goods", "receive_goods"),
            ("reorder needed", "reorder_needed"),
        ],
        doc=("receive_goods", "Record goods received"),
    ),
    Spec(
        "sample.R",
        "r",
        defs=[
            ("function", "weekday_profile"),
            ("function", "forecast_loaves"),
            ("function", "flour_needed"),
        ],
        refs=("forecast_loaves", {"weekday_profile", "lm", "round"}),
        searches=[
            ("weekday profile", "weekday_profile"),
            ("forecast loaves", "forecast_loaves"),
            ("flour needed", "flour_needed"),
        ],
        doc=("weekday_profile", "Average sales per weekday"),
    ),
    Spec(
        "sample.ml",
        "ocaml",
        defs=[
            ("type", "level"),
            ("class", "Garage"),
            ("method", "Garage.park_car"),
            ("method", "Garage.free_spaces"),
            ("class", "PRICING"),
            ("function", "occupancy_percent"),
        ],
        skeleton=("Garage", ["module Garage = struct", "let free_spaces garage ="], []),
        refs=("occupancy_percent", {"free_spaces", "fold_left"}),
        searches=[
            ("park car", "Garage.park_car"),
            ("occupancy percent", "occupancy_percent"),
            ("free spaces", "Garage.free_spaces"),
        ],
        doc=("Garage.park_car", "lowest level with a free space"),
    ),
    Spec(
        "sample.ps1",
        "powershell",
        defs=[
            ("function", "Get-ReleaseVersion"),
            ("function", "Invoke-InstallerSigning"),
            ("class", "ReleaseManifest"),
            ("method", "ReleaseManifest.ToJson"),
        ],
        refs=("Invoke-InstallerSigning", {"Set-AuthenticodeSignature", "Get-ChildItem"}),
        searches=[
            ("get release version", "Get-ReleaseVersion"),
            ("invoke installer signing", "Invoke-InstallerSigning"),
            ("release manifest to json", "ReleaseManifest.ToJson"),
        ],
        doc=("Invoke-InstallerSigning", "Sign every installer"),
    ),
    Spec(
        "sample.jl",
        "julia",
        defs=[
            ("type", "Reading"),
            ("class", "SensorReading"),
            ("function", "moving_average"),
            ("function", "flag_outliers"),
            ("function", "std_dev"),  # the short form
        ],
        refs=("flag_outliers", {"std_dev", "filter", "SensorReading"}),
        searches=[
            ("moving average", "moving_average"),
            ("flag outliers", "flag_outliers"),
            ("sensor reading", "SensorReading"),
        ],
        doc=("moving_average", "Mean of each window"),
    ),
    Spec(
        "sample.erl",
        "erlang",
        defs=[
            ("type", "window"),
            ("function", "new"),
            ("function", "record_hit"),
            ("function", "hits_in_window"),
            ("function", "prune"),
        ],
        refs=("record_hit", {"prune", "window"}),
        searches=[
            ("record hit", "record_hit"),
            ("hits in window", "hits_in_window"),
        ],
        doc=("new", "A sliding window counting hits"),
    ),
]
