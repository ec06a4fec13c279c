"""The cooling plant's parameters (:class:`CoolingModel`), the generic warm-water plant, a system
file's ``[cooling]`` table, and the timeline columns cooling adds (package :mod:`core.cooling`;
equations and sources in ``docs/cooling.md``)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..power import peak_input_power_w
from .steady import _controls, steady_state

#: Specific heat of liquid water, J/(kg·K): 4.18 kJ/(kg·K) between 20 and 40 °C (IAPWS-95 via the
#: NIST Chemistry WebBook, "Thermophysical properties of fluid systems": 4.1816 at 20 °C, 4.1785 at
#: 30 °C, 4.1786 at 40 °C, 1 bar); the conventional 4186 J/(kg·K) is within 0.2 % of these.
CP_WATER = 4186.0

#: Columns appended to timeline.parquet when cooling is on (units in the names; °C, W).
COOLING_COLUMNS = (
    "pue",
    "supply_temp_c",            # secondary supply (CDU → racks)
    "return_temp_c",            # secondary return (racks → CDU)
    "primary_supply_temp_c",    # facility loop, plant → CDUs
    "primary_return_temp_c",    # facility loop, CDUs → plant
    "tower_supply_temp_c",      # tower loop, towers → plant heat exchanger (cold)
    "tower_return_temp_c",      # tower loop, plant heat exchanger → towers (hot)
    "cooling_power_w",          # cdu_pump_w + facility_pump_w + tower_fan_w
    "cdu_pump_w",
    "facility_pump_w",          # primary + tower-loop pumps
    "tower_fan_w",
    "heat_rejected_w",          # heat the towers reject to the air
    "wetbulb_c",
)


#: Names an FMU's variables can be mapped to: two inputs and the outputs of COOLING_COLUMNS.
FMU_INPUTS = ("heat_w", "wetbulb_c")
FMU_OUTPUTS = tuple(c for c in COOLING_COLUMNS if c not in ("pue", "wetbulb_c"))
FMU_NAMES = FMU_INPUTS + FMU_OUTPUTS


@dataclasses.dataclass(frozen=True)
class CoolingModel:
    """Parameters of the cooling plant (SI: W, kg/s, s, J/(kg·K); temperatures in °C).

    See docs/cooling.md for the meaning of each parameter, the generic defaults and their sources.
    ``fmu``: path of an FMU (FMI 2.0 co-simulation) that replaces the built-in model, with
    ``fmu_variables`` mapping twinsweep's names (``heat_w``, ``wetbulb_c`` in; any of
    :data:`COOLING_COLUMNS` out) to the FMU's variable names; see :class:`FMUCoolingModel`.
    """

    design_heat_w: float
    secondary_flow_kg_s: float
    primary_flow_kg_s: float
    tower_flow_kg_s: float
    cdu_pump_w: float
    primary_pump_w: float
    tower_pump_w: float
    tower_fan_w: float
    status: str = "assumed"
    cp_j_per_kg_k: float = CP_WATER
    design_wetbulb_c: float = 23.0
    secondary_supply_c: float = 32.0
    primary_supply_c: float = 28.5
    secondary_time_constant_s: float = 120.0
    primary_time_constant_s: float = 300.0
    tower_time_constant_s: float = 600.0
    secondary_min_flow: float = 1.0   # CDU pumps on constant differential pressure: ~constant flow
    primary_min_flow: float = 0.4     # facility flow follows the CDU valves (variable-speed pumps)
    tower_min_flow: float = 1.0       # constant-speed condenser-water pumps
    tower_fan_min_speed: float = 0.2
    cdu_approach_c: float = 2.0
    plant_hx_approach_c: float = 1.5
    tower_approach_c: float = 4.0
    fmu: str | None = None
    fmu_variables: tuple = ()  # sorted (twinsweep name, FMU variable name or tuple of names)

    def __post_init__(self):
        if self.status not in ("assumed", "published"):
            raise ConfigError(f"[cooling] status must be 'assumed' or 'published', got {self.status!r}")
        positive = ("design_heat_w", "secondary_flow_kg_s", "primary_flow_kg_s", "tower_flow_kg_s",
                    "cp_j_per_kg_k", "secondary_time_constant_s", "primary_time_constant_s",
                    "tower_time_constant_s", "tower_approach_c")
        for k in positive:
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ConfigError(f"[cooling] {k} must be a finite number > 0, got {v!r}")
        for k in ("cdu_pump_w", "primary_pump_w", "tower_pump_w", "tower_fan_w", "cdu_approach_c",
                  "plant_hx_approach_c"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ConfigError(f"[cooling] {k} must be a finite number >= 0, got {v!r}")
        for k in ("secondary_min_flow", "primary_min_flow", "tower_min_flow", "tower_fan_min_speed"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise ConfigError(f"[cooling] {k} must be in (0, 1], got {v!r}")
        for k in ("design_wetbulb_c", "secondary_supply_c", "primary_supply_c"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and -60 <= v <= 100):
                raise ConfigError(f"[cooling] {k} must be a temperature in °C (-60..100), got {v!r}")
        # second law at the design point: each heat exchanger's cold outlet stays below its hot inlet
        # and its cold inlet below its hot outlet (counter-flow), and the towers can reach the setpoint
        d = self.design_point()
        if not (d["primary_supply_temp_c"] <= d["supply_temp_c"] and d["primary_return_temp_c"] <= d["return_temp_c"]):
            raise ConfigError(
                f"[cooling] CDU heat exchanger violates the second law at the design point "
                f"(secondary {d['supply_temp_c']:.1f}/{d['return_temp_c']:.1f} °C, primary "
                f"{d['primary_supply_temp_c']:.1f}/{d['primary_return_temp_c']:.1f} °C): raise "
                f"secondary_supply_c or primary_flow_kg_s")
        if not (d["tower_supply_temp_c"] <= d["primary_supply_temp_c"] and d["tower_return_temp_c"] <= d["primary_return_temp_c"]):
            raise ConfigError(
                f"[cooling] plant heat exchanger violates the second law at the design point "
                f"(primary {d['primary_supply_temp_c']:.1f}/{d['primary_return_temp_c']:.1f} °C, tower "
                f"{d['tower_supply_temp_c']:.1f}/{d['tower_return_temp_c']:.1f} °C): raise tower_flow_kg_s")

    # ---- derived quantities
    @property
    def assumed(self) -> bool:
        return self.status != "published"

    @property
    def thermal_masses_j_per_k(self) -> tuple[float, float, float]:
        """``C_i = τ_i · ṁ_i,d · c_p`` of the secondary, primary and tower loops (J/K)."""
        c = self.cp_j_per_kg_k
        return (self.secondary_time_constant_s * self.secondary_flow_kg_s * c,
                self.primary_time_constant_s * self.primary_flow_kg_s * c,
                self.tower_time_constant_s * self.tower_flow_kg_s * c)

    def time_constants_s(self, load: float = 1.0, wetbulb_c: float | None = None) -> tuple[float, float, float]:
        """Time constants of the three loops (s) at load fraction ``load``: ``τ_i / f_i`` with the
        flow fraction ``f_i`` the controls set there (at the design wet bulb unless given)."""
        wb = self.design_wetbulb_c if wetbulb_c is None else wetbulb_c
        k = _controls(self, np.asarray([float(load) * self.design_heat_w]), np.asarray([float(wb)]))
        return tuple(float(t / k[f][0]) for t, f in zip(
            (self.secondary_time_constant_s, self.primary_time_constant_s, self.tower_time_constant_s),
            ("fs", "fp", "ft")))

    @property
    def design_delta_t_c(self) -> tuple[float, float, float]:
        """Design temperature rise ``Q_d / (ṁ_d c_p)`` of the secondary, primary and tower loops (K)."""
        c = self.cp_j_per_kg_k
        return tuple(self.design_heat_w / (m * c) for m in
                     (self.secondary_flow_kg_s, self.primary_flow_kg_s, self.tower_flow_kg_s))

    def design_point(self) -> dict[str, float]:
        """Steady state at design heat and design wet bulb (°C, W; the keys of COOLING_COLUMNS)."""
        return {k: float(v[0]) for k, v in steady_state(self, [self.design_heat_w], [self.design_wetbulb_c]).items()}

    @property
    def design_pue(self) -> float:
        """PUE at design heat and design wet bulb: ``1 + (pumps + fans at design speeds) / Q_d``."""
        return self.design_point()["pue"]

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["fmu_variables"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.fmu_variables}
        d["design_pue"] = self.design_pue if self.fmu is None else None
        return d


#: Keys of a [cooling] table (every field of CoolingModel).
COOLING_KEYS = tuple(f.name for f in dataclasses.fields(CoolingModel))

#: Generic warm-water plant, per unit of design heat (all marked assumed; docs/cooling.md).
GENERIC = {
    "delta_t_c": (8.0, 8.0, 8.0),        # design ΔT of the secondary, primary, tower loops (K)
    "power_fraction": {"cdu_pump_w": 0.030, "primary_pump_w": 0.025, "tower_pump_w": 0.015,
                       "tower_fan_w": 0.030},  # of Q_d: design PUE = 1.10
}



def generic_cooling(design_heat_w: float, **overrides) -> CoolingModel:
    """The generic warm-water plant (marked assumed) sized for ``design_heat_w`` (W).

    Flows from a design ΔT of 8 K per loop (``ṁ = Q_d / (c_p ΔT)``); CDU pumps 3 %, primary pumps
    2.5 %, tower pumps 1.5 % and tower fans 3 % of the design heat, so the design PUE is 1.10; the
    primary supply setpoint is derived so that the fans run at full speed at the design wet bulb
    (``T_ps,set = T_wb,d + A + a_hx``) and the secondary setpoint 1.5 K above what the CDU can
    reach (``T_ss,set = T_ps,set + a_cdu + 1.5``), unless ``overrides`` give them. ``overrides``:
    any :class:`CoolingModel` field; a given flow or power replaces the derived one.
    """
    q = float(design_heat_w)
    if not (math.isfinite(q) and q > 0):
        raise ConfigError(f"cooling: design heat must be > 0 W, got {design_heat_w!r}")
    unknown = set(overrides) - set(COOLING_KEYS)
    if unknown:
        raise ConfigError(f"cooling: unknown key(s) {sorted(unknown)}; allowed: {', '.join(COOLING_KEYS)}")
    cp = float(overrides.get("cp_j_per_kg_k", CP_WATER))
    kw: dict[str, Any] = {"design_heat_w": q}
    for loop, dt in zip(("secondary", "primary", "tower"), GENERIC["delta_t_c"]):
        kw[f"{loop}_flow_kg_s"] = q / (cp * dt)
    for k, frac in GENERIC["power_fraction"].items():
        kw[k] = frac * q
    defaults = {f.name: f.default for f in dataclasses.fields(CoolingModel) if f.default is not dataclasses.MISSING}
    wb = float(overrides.get("design_wetbulb_c", defaults["design_wetbulb_c"]))
    app = float(overrides.get("tower_approach_c", defaults["tower_approach_c"]))
    ahx = float(overrides.get("plant_hx_approach_c", defaults["plant_hx_approach_c"]))
    acdu = float(overrides.get("cdu_approach_c", defaults["cdu_approach_c"]))
    kw["primary_supply_c"] = float(overrides.get("primary_supply_c", wb + app + ahx))
    kw["secondary_supply_c"] = kw["primary_supply_c"] + acdu + 1.5
    kw.update(overrides)
    return CoolingModel(**kw)


def cooling_from_table(table: dict, design_heat_w: float | None, where: str = "[cooling]",
                       base_dir: str | Path | None = None) -> CoolingModel:
    """A :class:`CoolingModel` from a system file's ``[cooling]`` table.

    Keys not given come from :func:`generic_cooling` sized for the table's ``design_heat_w``, else
    for ``design_heat_w`` (the system's peak IT input power). ``fmu`` is resolved against
    ``base_dir`` (the system file's folder); ``fmu_variables`` is a table of name → FMU variable
    (a string, or a list of strings: the heat is split equally over them).
    Raises ConfigError naming the bad key.
    """
    t = dict(table)
    unknown = set(t) - set(COOLING_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {', '.join(COOLING_KEYS)}")
    qd = t.pop("design_heat_w", design_heat_w)
    if qd is None or not (float(qd) > 0):
        raise ConfigError(f"{where}: design_heat_w is needed (the system has no power model to size the plant from)")
    if "fmu" in t and t["fmu"] is not None:
        p = Path(str(t["fmu"])).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        t["fmu"] = str(p)
    fv = t.pop("fmu_variables", {}) or {}
    if not isinstance(fv, dict):
        raise ConfigError(f"{where}: fmu_variables must be a table of name = \"FMU variable\"")
    bad = set(fv) - set(FMU_NAMES)
    if bad:
        raise ConfigError(f"{where}: fmu_variables has unknown name(s) {sorted(bad)}; allowed: {', '.join(FMU_NAMES)}")
    t["fmu_variables"] = tuple(sorted((k, tuple(v) if isinstance(v, list) else str(v)) for k, v in fv.items()))
    for k, v in list(t.items()):
        if k not in ("status", "fmu", "fmu_variables") and isinstance(v, bool):
            raise ConfigError(f"{where}: {k} must be a number, got {v!r}")
        if k not in ("status", "fmu", "fmu_variables"):
            try:
                t[k] = float(v)
            except (TypeError, ValueError):
                raise ConfigError(f"{where}: {k} must be a number, got {v!r}") from None
    return generic_cooling(float(qd), **t)


def peak_heat_w(system) -> float:
    """Peak IT input power of ``system`` (W): every node at full CPU and GPU utilisation (each
    partition's nodes of their own type), through the conversion losses
    (:func:`core.power.peak_input_power_w`). 0 when the system has no power model."""
    return peak_input_power_w(system.power, system.nodes, system.cpus_per_node, system.gpus_per_node,
                              system.node_types())


def cooling_model_for(system) -> CoolingModel:
    """The system's cooling model: its ``[cooling]`` table, else the generic plant sized for its
    peak IT input power (:func:`peak_heat_w`). Raises ConfigError when neither is possible."""
    cm = getattr(system, "cooling", None)
    if cm is not None:
        return cm
    q = peak_heat_w(system)
    if q <= 0:
        raise ConfigError(
            f"system {system.name!r}: cannot size a cooling plant: it has no [cooling] table and no power "
            "model (peak IT power 0 W)")
    return generic_cooling(q)
