"""Reduced-order cooling plant: IT heat → coolant temperatures, pump/fan power, PUE (DESIGN.md §4).

The full description (equations, integration scheme, parameters and their sources) is in
``docs/cooling.md``; this docstring is its summary.

Plant (three water loops in series, heat flowing downstream)::

    racks ──Q──▶ secondary loop (CDU pumps) ──CDU HX──▶ primary / facility loop (facility pumps)
          ──plant HX──▶ tower loop (tower pumps) ──cooling towers (fans)──▶ outdoor air (wet bulb)

Inputs, constant over each *piece* of the run (the window cut at every change point of the IT
power and every sample start): the heat ``Q`` = IT input power including conversion losses
(``it_power_w + loss_w``: all electrical power ends up as heat in the coolant) and the outdoor
wet-bulb temperature ``T_wb``. ``q = Q / Q_d`` is the load fraction of the design heat.

Controls (feed-forward on the piece's load; at steady state they equal what a feedback
controller settles to):

* secondary flow ``ṁ_s = ṁ_s,d · clip(q, f_s,min, 1)`` (``f_min = 1``: constant-speed pumps);
  primary and tower flows follow the heat exchanger feeding them: the flow that keeps the loop's
  return ``δ·q`` below the upstream loop's return (δ = design hot-end approach), within
  ``[f_min, 1]`` of design — the design flow at design, and never against the second law;
* tower fans: speed ``s = clip(A·q / (T_ps,set − a_hx·q − T_wb), s_min, 1)`` — the slowest that
  brings the tower water to the temperature the primary setpoint needs, with the tower approach
  law ``T_ts − T_wb = A·q / s`` (A = approach at design load and full fan speed);
* supply temperatures (a bypass/mixing valve holds a setpoint when the plant could go colder):
  ``T_ts = max(T_ps,set − a_hx·q, T_wb + A·q/s)``, ``T_ps = T_ts + a_hx·q``,
  ``T_ss = max(T_ss,set, T_ps + a_cdu·q)`` (``a_*``: heat-exchanger approaches at design load,
  proportional to the heat carried). The towers never cool below the wet bulb.

Dynamics: each loop is a well-mixed thermal mass ``C_i`` (J/K) at its return temperature::

    C_s dT_sr/dt = Q                      − ṁ_s c_p (T_sr − T_ss)
    C_p dT_pr/dt = ṁ_s c_p (T_sr − T_ss)  − ṁ_p c_p (T_pr − T_ps)
    C_t dT_tr/dt = ṁ_p c_p (T_pr − T_ps)  − ṁ_t c_p (T_tr − T_ts)

with ``C_i = τ_i · ṁ_i,d · c_p`` (``τ_i`` = the loop's time constant at design flow; at flow
fraction f it is ``τ_i / f``). At steady state every loop obeys ``Q = ṁ c_p ΔT``. Within a piece
all inputs are constant, so the system is linear time-invariant there; it is integrated *exactly*
with the matrix exponential (closed form for this lower-bidiagonal matrix through divided
differences of exp), which is unconditionally stable for any piece length. Reported temperatures
are exact time-averages over each sample (of its pieces), like every other timeline column, so
results do not depend on the sample period.

Power: pumps and fans follow the affinity law, ``P = P_d · (speed)³`` (flow ∝ speed);
``cooling_power_w = cdu_pump_w + facility_pump_w + tower_fan_w`` (facility pumps = primary +
tower-loop pumps); ``facility_power_w = it + loss + cooling``; ``pue = facility / IT equipment power``
(:func:`core.power.it_equipment_power`: a room UPS's losses and the CDUs are facility overhead).

Modules, one concern each: :mod:`.model` (parameters, the generic plant, the ``[cooling]`` table,
the timeline columns), :mod:`.steady` (controls and steady state), :mod:`.dynamics` (exact
integration), :mod:`.wetbulb` (the wet-bulb input), :mod:`.fmu` (a site's FMU through fmpy) and
:mod:`.timeline` (:func:`apply_cooling`: cooling on a run's timeline).

Public names (re-exported here): :class:`CoolingModel`, :func:`generic_cooling`, :func:`cooling_from_table`,
:func:`cooling_model_for`, :func:`integrate`, :func:`steady_state`, :func:`wetbulb_bins`,
:func:`check_wetbulb`, :func:`apply_cooling`, :class:`FMUCoolingModel`, :data:`COOLING_COLUMNS`, :data:`CP_WATER`.
"""

from __future__ import annotations

from .dynamics import CoolingTrace, integrate
from .fmu import FMUCoolingModel
from .model import (COOLING_COLUMNS, COOLING_KEYS, CP_WATER, CoolingModel, cooling_from_table, cooling_model_for,
                    generic_cooling, peak_heat_w)
from .steady import steady_state
from .timeline import apply_cooling
from .wetbulb import check_wetbulb, wetbulb_bins

__all__ = [
    "CP_WATER",
    "COOLING_COLUMNS",
    "COOLING_KEYS",
    "CoolingModel",
    "CoolingTrace",
    "FMUCoolingModel",
    "apply_cooling",
    "check_wetbulb",
    "cooling_from_table",
    "cooling_model_for",
    "generic_cooling",
    "integrate",
    "steady_state",
    "wetbulb_bins",
    "peak_heat_w",
]
