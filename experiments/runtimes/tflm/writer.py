"""Write small ``.tflite`` flatbuffers with the ``tflite`` package's schema builders.

The one flatbuffer writer of the project: the seeded generator (:mod:`experiments.runtimes.tflm.generate`),
the TFLite Micro benchmark's control-flow models (:mod:`experiments.bench.tflm`) and the tests
build their models with :func:`write_tflite`.
"""

from __future__ import annotations

__all__ = ["write_tflite"]


def write_tflite(path, subgraphs, signatures=None):
    """Write a minimal ``.tflite`` flatbuffer with the ``tflite`` package's schema builders.

    ``subgraphs``: ``[{"tensors": [(name, shape, TensorType) or (name, shape, TensorType,
    extra)], "inputs": [...], "outputs": [...], "ops": [(builtin operator name, inputs, outputs,
    None or (options table name, {field: value}))]}]``, subgraph 0 first; an operator name
    ``"CUSTOM:<code>"`` writes a custom operator with that ``custom_code``. ``extra`` is a dict
    with optional ``"data"`` (bytes: the tensor's constant buffer, little-endian, its own
    buffer; without it the tensor uses buffer 0, the empty buffer), ``"quant"`` (``(scales,
    zero_points)``: per-tensor or per-channel quantisation, ``"quant_dim"`` the channel axis)
    and ``"variable"`` (``is_variable``). An options value that is a list is written as an int32
    vector (e.g. ``ReshapeOptions.NewShape``), a string as a string (e.g.
    ``VarHandleOptions.SharedName``). ``signatures``: optional ``[{"key": str, "subgraph": int,
    "inputs": {name: tensor index}, "outputs": {name: tensor index}}]``, written as the model's
    ``signature_defs`` (the methods of a multi-signature model). Returns ``path``. Used to build control-flow
    models (IF, WHILE, CALL_ONCE) for the benchmark and the tests, and the differential test's
    generated models (:mod:`experiments.runtimes.tflm.generate`).
    """
    import flatbuffers
    import tflite

    b = flatbuffers.Builder(1024)
    codes = list(dict.fromkeys(o[0] for s in subgraphs for o in s["ops"]))

    def ivec(start, xs):
        start(b, len(xs))
        for x in reversed(xs):
            b.PrependInt32(x)
        return b.EndVector()

    def ovec(start, offs):
        start(b, len(offs))
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    tflite.BufferStart(b)
    bufs = [tflite.BufferEnd(b)]
    sgs = []
    for s in subgraphs:
        tens = []
        for name, shape, ttype, *rest in s["tensors"]:
            extra = rest[0] if rest else {}
            buf = 0
            if extra.get("data") is not None:
                raw = bytes(extra["data"])
                b.StartVector(1, len(raw), 16)  # 16-byte aligned data, as the converter
                b.head = b.head - len(raw)
                b.Bytes[b.head:b.head + len(raw)] = raw
                dv = b.EndVector()
                tflite.BufferStart(b)
                tflite.BufferAddData(b, dv)
                bufs.append(tflite.BufferEnd(b))
                buf = len(bufs) - 1
            q = None
            if extra.get("quant") is not None:
                scales, zps = extra["quant"]
                tflite.QuantizationParametersStartScaleVector(b, len(scales))
                for x in reversed(scales):
                    b.PrependFloat32(x)
                sv = b.EndVector()
                tflite.QuantizationParametersStartZeroPointVector(b, len(zps))
                for x in reversed(zps):
                    b.PrependInt64(x)
                zv = b.EndVector()
                tflite.QuantizationParametersStart(b)
                tflite.QuantizationParametersAddScale(b, sv)
                tflite.QuantizationParametersAddZeroPoint(b, zv)
                tflite.QuantizationParametersAddQuantizedDimension(b, extra.get("quant_dim", 0))
                q = tflite.QuantizationParametersEnd(b)
            n = b.CreateString(name)
            sh = ivec(tflite.TensorStartShapeVector, shape)
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, sh)
            tflite.TensorAddType(b, ttype)
            tflite.TensorAddBuffer(b, buf)
            tflite.TensorAddName(b, n)
            if q is not None:
                tflite.TensorAddQuantization(b, q)
            if extra.get("variable"):
                tflite.TensorAddIsVariable(b, True)
            tens.append(tflite.TensorEnd(b))
        tv = ovec(tflite.SubGraphStartTensorsVector, tens)
        ops = []
        for opname, ins, outs, opts in s["ops"]:
            iv = ivec(tflite.OperatorStartInputsVector, ins)
            ov = ivec(tflite.OperatorStartOutputsVector, outs)
            if opts is not None:
                vecs = {f: ivec(getattr(tflite, opts[0] + "Start" + f + "Vector"), v)
                        for f, v in opts[1].items() if isinstance(v, (list, tuple))}
                vecs.update({f: b.CreateString(v) for f, v in opts[1].items()
                             if isinstance(v, str)})
                getattr(tflite, opts[0] + "Start")(b)
                for f, v in opts[1].items():
                    getattr(tflite, opts[0] + "Add" + f)(b, vecs.get(f, v))
                oo = getattr(tflite, opts[0] + "End")(b)
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, codes.index(opname))
            tflite.OperatorAddInputs(b, iv)
            tflite.OperatorAddOutputs(b, ov)
            if opts is not None:
                tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, opts[0]))
                tflite.OperatorAddBuiltinOptions(b, oo)
            ops.append(tflite.OperatorEnd(b))
        opv = ovec(tflite.SubGraphStartOperatorsVector, ops)
        inv = ivec(tflite.SubGraphStartInputsVector, s["inputs"])
        outv = ivec(tflite.SubGraphStartOutputsVector, s["outputs"])
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tv)
        tflite.SubGraphAddOperators(b, opv)
        tflite.SubGraphAddInputs(b, inv)
        tflite.SubGraphAddOutputs(b, outv)
        sgs.append(tflite.SubGraphEnd(b))
    ocs = []
    for opname in codes:
        custom = opname.split(":", 1)[1] if opname.startswith("CUSTOM:") else None
        cc = b.CreateString(custom) if custom is not None else None
        code = getattr(tflite.BuiltinOperator, "CUSTOM" if custom is not None else opname)
        tflite.OperatorCodeStart(b)
        if cc is not None:
            tflite.OperatorCodeAddCustomCode(b, cc)
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddVersion(b, 1)
        ocs.append(tflite.OperatorCodeEnd(b))
    sigs = []
    for sig in signatures or ():
        maps = {}
        for part in ("inputs", "outputs"):
            tms = []
            for tname, idx in sig.get(part, {}).items():
                nm = b.CreateString(tname)
                tflite.TensorMapStart(b)
                tflite.TensorMapAddName(b, nm)
                tflite.TensorMapAddTensorIndex(b, int(idx))
                tms.append(tflite.TensorMapEnd(b))
            start = (tflite.SignatureDefStartInputsVector if part == "inputs"
                     else tflite.SignatureDefStartOutputsVector)
            maps[part] = ovec(start, tms)
        key = b.CreateString(sig["key"])
        tflite.SignatureDefStart(b)
        tflite.SignatureDefAddInputs(b, maps["inputs"])
        tflite.SignatureDefAddOutputs(b, maps["outputs"])
        tflite.SignatureDefAddSignatureKey(b, key)
        tflite.SignatureDefAddSubgraphIndex(b, int(sig["subgraph"]))
        sigs.append(tflite.SignatureDefEnd(b))
    sdv = ovec(tflite.ModelStartSignatureDefsVector, sigs) if sigs else None
    sgv = ovec(tflite.ModelStartSubgraphsVector, sgs)
    ocv = ovec(tflite.ModelStartOperatorCodesVector, ocs)
    bv = ovec(tflite.ModelStartBuffersVector, bufs)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddSubgraphs(b, sgv)
    tflite.ModelAddOperatorCodes(b, ocv)
    tflite.ModelAddBuffers(b, bv)
    if sdv is not None:
        tflite.ModelAddSignatureDefs(b, sdv)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    path.write_bytes(b.Output())
    return path
