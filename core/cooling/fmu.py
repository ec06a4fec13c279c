"""A site's cooling plant as an FMU (FMI 2.0 co-simulation) through the optional ``fmpy``
(package :mod:`core.cooling`, docs/cooling.md)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError
from .model import COOLING_COLUMNS, FMU_NAMES, FMU_OUTPUTS
from .steady import _inputs, _pue


_UNIT_SCALE = {"W": 1.0, "kW": 1e3, "MW": 1e6}


class FMUCoolingModel:
    """A site's cooling plant exported as an FMU (FMI 2.0 co-simulation), driven through ``fmpy``.

    The FMU gets the same inputs as the built-in model, held constant over each sample: the heat
    (``heat_w``: IT input power incl. losses; when mapped to a list of variables it is split
    equally among them, e.g. one per CDU) and the wet bulb (``wetbulb_c``). After each
    ``doStep`` over the sample the mapped outputs are read; a sample's value is the mean of its
    sub-step end points (``substeps`` per sample, trapezoidal with the value at its start).
    Units declared in the FMU are converted: K → °C, kW/MW → W (inputs likewise). Unmapped
    outputs are NaN; ``cooling_power_w`` is the FMU's own when mapped, else the sum of the mapped
    ``cdu_pump_w``, ``facility_pump_w`` and ``tower_fan_w``. ``pue`` = (heat + cooling) / heat.
    FMU time 0 is the start of the run's window.

    Raises ConfigError when fmpy is missing (``pip install twinsweep[fmu]``), the FMU is not FMI
    2.0 co-simulation, or a mapped variable does not exist.
    """

    def __init__(self, path: str | Path, variables: dict | tuple, substeps: int = 1):
        try:
            import fmpy  # noqa: F401
        except ImportError as exc:
            raise ConfigError("cooling: the FMU path needs fmpy (pip install 'twinsweep[fmu]')") from exc
        from fmpy import read_model_description

        self.path = str(path)
        if not Path(self.path).exists():
            raise ConfigError(f"cooling: FMU not found: {self.path}")
        self.variables = dict(variables)
        self.substeps = int(substeps)
        if self.substeps < 1:
            raise ConfigError("cooling: FMU substeps must be >= 1")
        try:
            self.md = read_model_description(self.path)
        except Exception as exc:
            raise ConfigError(f"cooling: cannot read FMU {self.path}: {exc}") from exc
        if not str(self.md.fmiVersion).startswith("2.") or self.md.coSimulation is None:
            raise ConfigError(f"cooling: {self.path} is not an FMI 2.0 co-simulation FMU (fmiVersion {self.md.fmiVersion})")
        by_name = {v.name: v for v in self.md.modelVariables}
        for k in ("heat_w",):
            if k not in self.variables:
                raise ConfigError("cooling: fmu_variables must map 'heat_w' to the FMU's heat input")
        self._vars: dict[str, list] = {}
        for k, names in self.variables.items():
            if k not in FMU_NAMES:
                raise ConfigError(f"cooling: unknown fmu_variables name {k!r}; allowed: {', '.join(FMU_NAMES)}")
            lst = list(names) if isinstance(names, (list, tuple)) else [names]
            missing = [nm for nm in lst if nm not in by_name]
            if missing:
                raise ConfigError(f"cooling: FMU {Path(self.path).name} has no variable(s) {missing} (for {k})")
            self._vars[k] = [by_name[nm] for nm in lst]
        self.sha256 = hashlib.sha256(Path(self.path).read_bytes()).hexdigest()

    @staticmethod
    def _unit(var) -> str | None:
        u = getattr(var, "unit", None)
        if not u and getattr(var, "declaredType", None) is not None:
            u = getattr(var.declaredType, "unit", None)
        return u

    def _to_fmu(self, name: str, var, value: float) -> float:
        u = self._unit(var)
        if name == "wetbulb_c" and u == "K":
            return value + 273.15
        if name == "heat_w" and u in _UNIT_SCALE:
            return value / _UNIT_SCALE[u]
        return value

    def _from_fmu(self, name: str, var, value: float) -> float:
        u = self._unit(var)
        if name.endswith("_temp_c") and u == "K":
            return value - 273.15
        if name.endswith("_w") and u in _UNIT_SCALE:
            return value * _UNIT_SCALE[u]
        return value

    def run(self, heat_w, wetbulb_c, dt_s) -> pd.DataFrame:
        """One row per sample with :data:`COOLING_COLUMNS` (see the class doc)."""
        from fmpy import extract
        from fmpy.fmi2 import FMU2Slave

        heat, wb, h = _inputs(heat_w, wetbulb_c, dt_s)
        n = len(heat)
        outs = [k for k in FMU_OUTPUTS if k in self._vars]
        res = {k: np.full(n, np.nan) for k in outs}
        unzip = extract(self.path)
        fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=unzip,
                        modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName="twinsweep_cooling")
        try:
            fmu.instantiate()
            fmu.setupExperiment(startTime=0.0)

            def set_inputs(i):
                hv = self._vars["heat_w"]
                fmu.setReal([v.valueReference for v in hv],
                            [self._to_fmu("heat_w", v, float(heat[i]) / len(hv)) for v in hv])
                if "wetbulb_c" in self._vars:
                    wv = self._vars["wetbulb_c"]
                    fmu.setReal([v.valueReference for v in wv],
                                [self._to_fmu("wetbulb_c", v, float(wb[i])) for v in wv])

            def read():
                vals = {}
                for k in outs:
                    vs = self._vars[k]
                    raw = fmu.getReal([v.valueReference for v in vs])
                    vals[k] = sum(self._from_fmu(k, v, float(x)) for v, x in zip(vs, raw))
                    if k.endswith("_temp_c"):
                        vals[k] /= len(vs)  # several temperature variables: their mean
                return vals

            if n:
                set_inputs(0)
            fmu.enterInitializationMode()
            fmu.exitInitializationMode()
            t = 0.0
            for i in range(n):
                set_inputs(i)
                prev = read()
                acc = {k: 0.0 for k in outs}
                sub = float(h[i]) / self.substeps
                for _ in range(self.substeps):
                    status = fmu.doStep(currentCommunicationPoint=t, communicationStepSize=sub)
                    if status not in (0, 1, None):
                        raise ConfigError(f"cooling: FMU doStep failed at t = {t} s (status {status})")
                    t += sub
                    cur = read()
                    for k in outs:
                        acc[k] += (prev[k] + cur[k]) / 2.0
                    prev = cur
                for k in outs:
                    res[k][i] = acc[k] / self.substeps
            fmu.terminate()
        finally:
            try:
                fmu.freeInstance()
            except Exception:
                pass
            shutil.rmtree(unzip, ignore_errors=True)
        if "cooling_power_w" not in res:
            parts = [res[k] for k in ("cdu_pump_w", "facility_pump_w", "tower_fan_w") if k in res]
            res["cooling_power_w"] = np.sum(parts, axis=0) if parts else np.full(n, np.nan)
        res["pue"] = _pue(heat, res["cooling_power_w"])
        res["wetbulb_c"] = np.array(wb, dtype="float64")
        return pd.DataFrame({c: res.get(c, np.full(n, np.nan)) for c in COOLING_COLUMNS}, columns=list(COOLING_COLUMNS))
