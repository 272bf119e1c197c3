"""The specs of ``language_specs`` for shell, scripting and functional languages (one module
would be over 400 lines)."""

from __future__ import annotations

from .language_specs import Spec

SCRIPTING = [
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
        doc=("Kitchen.OrderQueue.enqueue", "rush orders jump the line"),  # @doc "..."
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
    Spec(
        "sample.tf",
        "hcl",
        defs=[
            ("class", "aws_s3_bucket.backups"),  # named the way Terraform refers to it
            ("class", "aws_s3_bucket_lifecycle_configuration.expire_old_backups"),
            ("class", "variable.retention_days"),
            ("class", "output.backup_bucket_arn"),
        ],
        refs=(
            "aws_s3_bucket_lifecycle_configuration.expire_old_backups",
            {"backups", "retention_days"},
        ),
        searches=[
            ("expire old backups", "aws_s3_bucket_lifecycle_configuration.expire_old_backups"),
            ("retention days", "variable.retention_days"),
            ("backup bucket arn", "output.backup_bucket_arn"),
        ],
        doc=("aws_s3_bucket.backups", "Object storage for nightly database backups."),
    ),
]
