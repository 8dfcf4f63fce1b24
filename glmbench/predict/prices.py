"""What a setup costs to run, per hour: a price table of cards (`glmbench search`).

A card is priced one of two ways:

- bought: its purchase price amortized over `years` of continuous use, plus its board power
  (`power_w`, drawn all the time: an upper bound, idle cards draw less) at `kwh_usd` per kWh;
- rented: a cloud on-demand price per GPU-hour (`cloud_usd_per_hour`, power and host included).

A setup of n cards costs n times its card. Only the cards are priced (not the host, case, power
supply or the link between cards). `basis` says which price to take: "purchase", "cloud", or
"any" (purchase where the card has one, else cloud); a card without a price on that basis has no
price, and `search` leaves it out, saying so.

The defaults (glmbench/data/prices/default.json, sources and dates in docs/SOURCES.md) are launch
list prices. A user file (JSON or TOML) of the same fields overrides them: its top-level
`years`, `kwh_usd`, `basis` replace the defaults', and each card it names replaces that card's
entry whole. A card the hardware catalog does not know is, in a user file, an error naming the
file and the card; in the shipped defaults it is skipped (they price cards of the full catalog).

    years = 4
    kwh_usd = 0.30
    [cards.rtx-3090]
    purchase_usd = 750        # used
    power_w = 350
    source = "eBay sold listings, 2026-11"
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from glmbench import vocab
from glmbench.predict import hardware

PRICE_DIR = os.path.join(vocab.DATA_DIR, "prices")
DEFAULT_PRICES = os.path.join(PRICE_DIR, "default.json")
BASES = ("any", "purchase", "cloud")
HOURS_PER_YEAR = 24 * 365
_TOP = {"description", "years", "kwh_usd", "basis", "cards"}
_CARD = {"purchase_usd", "power_w", "cloud_usd_per_hour", "date", "source"}


@dataclass(frozen=True)
class CardPrice:
    key: str
    purchase_usd: float | None = None
    power_w: float | None = None
    cloud_usd_per_hour: float | None = None
    date: str = ""
    source: str = field(default="", compare=False)
    where: str = ""                  # the file this entry came from


@dataclass(frozen=True)
class Cost:
    """The price of one setup: `usd_per_hour` for all its cards, how it was reached."""
    usd_per_hour: float
    basis: str                       # "purchase" | "cloud"
    detail: str
    source: str


@dataclass(frozen=True)
class PriceTable:
    years: float
    kwh_usd: float
    basis: str
    cards: dict                      # key -> CardPrice
    files: tuple = ()

    def card(self, gpu) -> CardPrice | None:
        """The entry for a GPU (a hardware.GPU, its key or its display name), or None."""
        for k in _keys(gpu):
            if k in self.cards:
                return self.cards[k]
        return None

    def why_unpriced(self, gpu) -> str | None:
        """None when the GPU has a price on this table's basis, else why not."""
        c = self.card(gpu)
        name = gpu.name if isinstance(gpu, hardware.GPU) else str(gpu)
        if c is None:
            return f"{name} is not in the price table ({', '.join(self.files) or 'no file'})"
        if self.basis in ("any", "purchase") and c.purchase_usd is not None:
            if c.power_w is None:
                return f"{name}: `power_w` is missing ({c.where}), needed with a purchase price"
            return None
        if self.basis in ("any", "cloud") and c.cloud_usd_per_hour is not None:
            return None
        return f"{name} has no {'purchase or cloud' if self.basis == 'any' else self.basis} price ({c.where})"

    def cost(self, gpu, n_cards: int) -> Cost:
        """USD per hour for `n_cards` of `gpu`; ValueError when the table has no price for it."""
        why = self.why_unpriced(gpu)
        if why is not None:
            raise ValueError(why)
        c = self.card(gpu)
        if self.basis in ("any", "purchase") and c.purchase_usd is not None:
            amort = c.purchase_usd / (self.years * HOURS_PER_YEAR)
            power = c.power_w / 1000.0 * self.kwh_usd
            return Cost(n_cards * (amort + power), "purchase",
                        f"{n_cards} x (${c.purchase_usd:,.0f} over {self.years:g} y + {c.power_w:g} W at "
                        f"${self.kwh_usd:g}/kWh)", c.source)
        return Cost(n_cards * c.cloud_usd_per_hour, "cloud", f"{n_cards} x ${c.cloud_usd_per_hour:g}/GPU-hour",
                    c.source)

    def rows(self) -> list[dict]:
        """The table as rows (for the report)."""
        return [{"card": k, "purchase_usd": c.purchase_usd, "power_w": c.power_w,
                 "cloud_usd_per_hour": c.cloud_usd_per_hour, "date": c.date, "source": c.source, "file": c.where}
                for k, c in sorted(self.cards.items())]


def _keys(gpu) -> list[str]:
    if isinstance(gpu, hardware.GPU):
        return [_norm(gpu.key), _norm(gpu.name)]
    return [_norm(str(gpu))]


def _norm(s: str) -> str:
    return s.strip().lower().replace(" ", "-").replace("_", "-")


def _num(where, key, v, *, strict=True):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (v <= 0 if strict else v < 0):
        raise ValueError(f"{where}: field `{key}` must be a number {'>' if strict else '>='} 0, got {v!r}")
    return float(v)


def _card(where: str, key: str, d) -> CardPrice:
    w = f"{where}: cards.{key}"
    vocab.check_table(d, w, known=_CARD, required=())
    if "purchase_usd" not in d and "cloud_usd_per_hour" not in d:
        raise ValueError(f"{w}: give `purchase_usd` (with `power_w`) or `cloud_usd_per_hour`")
    if "purchase_usd" in d and "power_w" not in d:
        raise ValueError(f"{w}: field `power_w` is missing (a bought card's power is part of its cost)")
    for k in ("date", "source"):
        if k in d and not isinstance(d[k], str):
            raise ValueError(f"{w}: field `{k}` must be a string, got {d[k]!r}")
    return CardPrice(key=key,
                     purchase_usd=_num(w, "purchase_usd", d["purchase_usd"], strict=False) if "purchase_usd" in d else None,
                     power_w=_num(w, "power_w", d["power_w"], strict=False) if "power_w" in d else None,
                     cloud_usd_per_hour=(_num(w, "cloud_usd_per_hour", d["cloud_usd_per_hour"], strict=False)
                                         if "cloud_usd_per_hour" in d else None),
                     date=d.get("date", ""), source=d.get("source", ""), where=where)


def _read(path: str) -> dict:
    if not os.path.isfile(path):
        raise ValueError(f"price file {path!r} does not exist")
    return hardware._read_table(path)


def _catalog_key(name: str, extra: dict) -> str | None:
    """The hardware catalog's key for a card name (a key, a display name or an alias, as
    hardware.get_gpu resolves them), or a user profile's key; None when nobody knows it."""
    k = extra.get(_norm(name))
    if k is not None:
        return k
    try:
        g = hardware.get_gpu(name)
    except (ValueError, TypeError):
        return None
    return g.key


def _apply(base: dict, d: dict, where: str, known: dict, *, strict: bool = True) -> None:
    vocab.check_table(d, where, known=_TOP, required=())
    if "years" in d:
        base["years"] = _num(where, "years", d["years"])
    if "kwh_usd" in d:
        base["kwh_usd"] = _num(where, "kwh_usd", d["kwh_usd"], strict=False)
    if "basis" in d:
        if d["basis"] not in BASES:
            raise ValueError(f"{where}: field `basis` must be one of {', '.join(BASES)}, got {d['basis']!r}")
        base["basis"] = d["basis"]
    cards = d.get("cards", {})
    if not isinstance(cards, dict):
        raise ValueError(f"{where}: field `cards` must be a table of card = prices, got {type(cards).__name__}")
    for k, v in cards.items():
        key = _catalog_key(str(k), known) if not str(k).endswith((".json", ".toml")) else known.get(_norm(str(k)))
        if key is None:
            if not strict:
                continue        # the shipped table may price cards a trimmed catalog does not hold
            raise ValueError(f"{where}: card {k!r} in the price table is not in the hardware catalog "
                             f"(`glmbench hardware` lists its {len(hardware.list_gpus())} cards)")
        base["cards"][_norm(key)] = _card(where, str(k), v)


def load(path=None, *, years=None, kwh_usd=None, basis=None, gpus=()) -> PriceTable:
    """The default price table, overridden by the file at `path` (if any), then by the given
    `years`, `kwh_usd` and `basis`. `gpus`: user GPU profiles (not in the catalog) the file may
    price, by their key (path) or name."""
    known = {}
    for g in gpus:          # user profiles the file may price, by their path or name
        g = hardware.get_gpu(g)
        known[_norm(g.key)] = known[_norm(g.name)] = g.key
    base = {"years": None, "kwh_usd": None, "basis": "any", "cards": {}}
    files = [DEFAULT_PRICES]
    _apply(base, hardware._read_table(DEFAULT_PRICES), DEFAULT_PRICES, known, strict=False)
    if path is not None:
        p = os.fspath(path)
        _apply(base, _read(p), p, known)
        files.append(p)
    for nm, v in (("years", years), ("kwh_usd", kwh_usd)):
        if v is not None:
            base[nm] = _num(nm, nm, v, strict=(nm == "years"))
    if basis is not None:
        if basis not in BASES:
            raise ValueError(f"`basis` must be one of {', '.join(BASES)}, got {basis!r}")
        base["basis"] = basis
    for nm in ("years", "kwh_usd"):
        if base[nm] is None:
            raise ValueError(f"{files[-1]}: field `{nm}` is missing")
    return PriceTable(base["years"], base["kwh_usd"], base["basis"], base["cards"], tuple(files))
