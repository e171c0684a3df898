/* Scalar functions shared by the host backend (compiled as C11) and every OpenCL program: dtype
 * conversions and the Philox4x32-10 generator with its uniform and normal transforms. Both sides
 * compile this same text, so the host and every device give the same bits. It uses only
 * integer operations and correctly rounded float operations (+, -, *; f64 also / and sqrt) with
 * contraction off, never a library function whose accuracy varies between implementations.
 * The including file defines clt_u8 ... clt_i64, CLT_FN, the clt_bits_* casts and CLT_HAS_FP64. */

/* ---- f16 and bf16 ----------------------------------------------------------------------- */

/* c ? a : b for 64-bit unsigned values, as masks. The conversions below are branch-free, so
 * that loops over them vectorise: their one floating operation is done for every input, on 0
 * unless its result is wanted, and OR-ed into the result; no case overwrites a value computed
 * for another (a compiler would skip that computation under a branch, and may not turn a
 * floating operation under a branch into a vectorised select). */
#define CLT_SEL64(c, a, b) ((b) ^ (((a) ^ (b)) & (CLT_U64C(0) - (clt_u64)((c) != 0))))

/* A subnormal half is man * 2^-24: an exact product (a normal f32, or +0) on every device,
 * whatever its denormal mode. */
CLT_FN float clt_f16_to_f32(clt_u16 h)
{
    clt_u32 sign = ((clt_u32)h & 0x8000u) << 16;
    clt_u32 exp = ((clt_u32)h >> 10) & 0x1fu;
    clt_u32 man = (clt_u32)h & 0x3ffu;
    clt_u32 tiny = 0u - (clt_u32)(exp == 0); /* all ones for a subnormal or zero */
    clt_u32 sub = clt_f32_bits((float)(clt_i32)(man & tiny) * 0x1p-24f); /* 0 unless tiny */
    clt_u32 rebias = 112u + ((clt_u32)(exp == 0x1fu) * 112u); /* inf, NaN: to 0xff */
    clt_u32 mag = ((((exp + rebias) << 23) | (man << 13)) & ~tiny) | sub;
    return clt_bits_f32(sign | mag);
}

/* Round to nearest even; overflow to inf; NaN to 0x7e00 with the sign kept. Below 2^-14 (a
 * subnormal half or zero), |f| + 0.5 is |f| rounded to nearest even on a multiple of 2^-24 (the
 * ulp of [0.5, 1)) by the one correctly rounded addition: 0.5 + q 2^-24, q the half's bits; an
 * f32 subnormal that a device flushes to zero gives q = 0 as it should. */
CLT_FN clt_u16 clt_f32_to_f16(float f)
{
    clt_u32 x = clt_f32_bits(f);
    clt_u32 sign = (x >> 16) & 0x8000u;
    clt_u32 mag = x & 0x7fffffffu;
    clt_u32 tiny = 0u - (clt_u32)(mag < 0x38800000u); /* all ones below 2^-14 */
    /* normal half: round to nearest even on the 13 dropped bits, rebias 127 -> 15 */
    clt_u32 normal = (mag + 0xfffu + ((mag >> 13) & 1u) - 0x38000000u) >> 13;
    clt_u32 sub = clt_f32_bits(clt_bits_f32(mag & tiny) + 0.5f) - 0x3f000000u; /* 0 unless tiny */
    clt_u32 r = (normal & ~tiny) | sub;
    r = r < 0x7c00u ? r : 0x7c00u;          /* from 65520 (and inf, NaN) rounding rises to inf */
    r |= (clt_u32)(mag > 0x7f800000u) << 9; /* NaN: 0x7e00 */
    return (clt_u16)(sign | r);
}

CLT_FN float clt_bf16_to_f32(clt_u16 b)
{
    return clt_bits_f32((clt_u32)b << 16);
}

/* Round to nearest even; NaN to 0x7fc0 with the sign kept. */
CLT_FN clt_u16 clt_f32_to_bf16(float f)
{
    clt_u32 x = clt_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (clt_u16)(((x >> 16) & 0x8000u) | 0x7fc0u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (clt_u16)(x >> 16);
}

#if CLT_HAS_FP64
/* ---- f32 <-> f64 by integer operations: the same bits on devices that flush subnormals or
 * return their own NaN --------------------------------------------------------------------- */

/* Exact; NaN is quieted with its payload and sign kept. Branch-free (see CLT_SEL64): a
 * subnormal f32 is man * 2^-149, an exact product (a normal f64, or +0). */
CLT_FN double clt_f32_to_f64(float f)
{
    clt_u32 x = clt_f32_bits(f);
    clt_u64 sign = (clt_u64)(x >> 31) << 63;
    clt_u32 exp = (x >> 23) & 0xffu;
    clt_u64 man = x & 0x7fffffu;
    clt_u64 tiny = CLT_U64C(0) - (clt_u64)(exp == 0); /* all ones for a subnormal or zero */
    clt_u64 sub = clt_f64_bits((double)(clt_i32)(man & tiny) * 0x1p-149); /* 0 unless tiny */
    clt_u64 quiet = man ? CLT_U64C(0x0008000000000000) : 0;
    clt_u64 mag = ((((clt_u64)(exp + 896u) << 52) | (man << 29)) & ~tiny) | sub;
    mag = CLT_SEL64(exp == 0xffu, CLT_U64C(0x7ff0000000000000) | (man << 29) | quiet, mag);
    return clt_bits_f64(sign | mag);
}

/* Round to nearest even, overflowing to inf; NaN is quieted with the top of its payload and its
 * sign kept. */
CLT_FN float clt_f64_to_f32(double d)
{
    clt_u64 x = clt_f64_bits(d);
    clt_u32 sign = (clt_u32)(x >> 32) & 0x80000000u;
    clt_u64 mag = x & CLT_U64C(0x7fffffffffffffff);
    if (mag > CLT_U64C(0x7ff0000000000000))
        return clt_bits_f32(sign | 0x7fc00000u | (clt_u32)((mag >> 29) & 0x3fffffu));
    if (mag >= CLT_U64C(0x47effffff0000000)) /* FLT_MAX + half an ulp and above */
        return clt_bits_f32(sign | 0x7f800000u);
    if (mag >= CLT_U64C(0x3810000000000000)) { /* >= 2^-126: normal f32 */
        mag += CLT_U64C(0xfffffff) + ((mag >> 29) & 1u);
        mag -= CLT_U64C(896) << 52;
        return clt_bits_f32(sign | (clt_u32)(mag >> 29));
    }
    if (mag < CLT_U64C(0x3690000000000000)) /* below 2^-150: zero */
        return clt_bits_f32(sign);
    { /* subnormal f32: value = q * 2^-149 */
        clt_u32 shift = 926u - (clt_u32)(mag >> 52); /* 30 .. 53 */
        clt_u64 m = (mag & CLT_U64C(0xfffffffffffff)) | CLT_U64C(0x10000000000000);
        clt_u64 q = m >> shift;
        clt_u64 rem = m & ((CLT_U64C(1) << shift) - 1u);
        clt_u64 halfway = CLT_U64C(1) << (shift - 1u);
        if (rem > halfway || (rem == halfway && (q & 1u)))
            q += 1u;
        return clt_bits_f32(sign | (clt_u32)q);
    }
}
#endif

/* ---- float -> integer: truncate toward zero, saturate, NaN -> 0 ------------------------------ */

CLT_FN clt_i32 clt_f32_to_i32(float f)
{
    if (f != f)
        return 0;
    if (f >= 2147483648.0f)
        return 2147483647;
    if (f <= -2147483648.0f)
        return (clt_i32)(-2147483647 - 1);
    return (clt_i32)f;
}

CLT_FN clt_i64 clt_f32_to_i64(float f)
{
    if (f != f)
        return 0;
    if (f >= 9223372036854775808.0f)
        return CLT_I64C(0x7fffffffffffffff);
    if (f <= -9223372036854775808.0f)
        return (-CLT_I64C(0x7fffffffffffffff) - 1);
    return (clt_i64)f;
}

CLT_FN clt_u8 clt_f32_to_u8(float f)
{
    if (f != f || f <= 0.0f)
        return 0;
    if (f >= 255.0f)
        return 255;
    return (clt_u8)f;
}

/* Nonzero, NaN included; by bits so that a device flushing subnormals agrees with the host. */
CLT_FN clt_u8 clt_f32_to_bool(float f)
{
    return (clt_f32_bits(f) & 0x7fffffffu) != 0;
}

/* Integers of any width wrap modulo 2^bits. */
CLT_FN clt_i32 clt_i64_to_i32(clt_i64 v)
{
    return clt_bits_i32((clt_u32)((clt_u64)v & 0xffffffffu));
}

#if CLT_HAS_FP64
CLT_FN clt_i32 clt_f64_to_i32(double d)
{
    if (d != d)
        return 0;
    if (d >= 2147483647.0)
        return 2147483647;
    if (d <= -2147483648.0)
        return (clt_i32)(-2147483647 - 1);
    return (clt_i32)d;
}

CLT_FN clt_i64 clt_f64_to_i64(double d)
{
    if (d != d)
        return 0;
    if (d >= 9223372036854775808.0)
        return CLT_I64C(0x7fffffffffffffff);
    if (d <= -9223372036854775808.0)
        return (-CLT_I64C(0x7fffffffffffffff) - 1);
    return (clt_i64)d;
}

CLT_FN clt_u8 clt_f64_to_u8(double d)
{
    if (d != d || d <= 0.0)
        return 0;
    if (d >= 255.0)
        return 255;
    return (clt_u8)d;
}

CLT_FN clt_u8 clt_f64_to_bool(double d)
{
    return (clt_f64_bits(d) & CLT_U64C(0x7fffffffffffffff)) != 0;
}
#endif

/* x^n for integers by squaring, wrapping; a negative n gives 1/x^|n| truncated, as integer
 * division would (0 unless |x| is 1). */
CLT_FN clt_i64 clt_ipow(clt_i64 x, clt_i64 n)
{
    clt_u64 r = 1, b = (clt_u64)x;
    if (n < 0)
        return x == 1 ? 1 : x == -1 ? ((n & 1) ? -1 : 1) : 0;
    while (n > 0) {
        if (n & 1)
            r *= b;
        b *= b;
        n >>= 1;
    }
    return clt_bits_i64(r);
}

/* ---- Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") ---------- */

#define CLT_PHILOX_M0 0xD2511F53u
#define CLT_PHILOX_M1 0xCD9E8D57u
#define CLT_PHILOX_W0 0x9E3779B9u
#define CLT_PHILOX_W1 0xBB67AE85u

/* out[0..3] = Philox4x32-10(counter = (c0, c1, 0, 0), key = (k0, k1)). */
CLT_FN void clt_philox(clt_u32 c0, clt_u32 c1, clt_u32 k0, clt_u32 k1, clt_u32 *out)
{
    clt_u32 x0 = c0, x1 = c1, x2 = 0, x3 = 0;
    for (int r = 0; r < 10; r++) {
        clt_u32 hi0 = clt_mulhi32(CLT_PHILOX_M0, x0), lo0 = CLT_PHILOX_M0 * x0;
        clt_u32 hi1 = clt_mulhi32(CLT_PHILOX_M1, x2), lo1 = CLT_PHILOX_M1 * x2;
        clt_u32 y0 = hi1 ^ x1 ^ k0, y1 = lo1, y2 = hi0 ^ x3 ^ k1, y3 = lo0;
        x0 = y0;
        x1 = y1;
        x2 = y2;
        x3 = y3;
        k0 += CLT_PHILOX_W0;
        k1 += CLT_PHILOX_W1;
    }
    out[0] = x0;
    out[1] = x1;
    out[2] = x2;
    out[3] = x3;
}

/* A product rounded on its own, which no compiler can fuse with a following addition into an
 * fma: `#pragma OPENCL FP_CONTRACT OFF` is not honoured by every OpenCL compiler, and a fused
 * multiply-add rounds once where the host rounds twice. Every product in the transforms below
 * that feeds an addition goes through these. */
CLT_FN float clt_mulf(float a, float b)
{
    volatile float p = a * b;
    return p;
}

#if CLT_HAS_FP64
CLT_FN double clt_muld(double a, double b)
{
    volatile double p = a * b;
    return p;
}
#endif

/* [0, 1) from the top `digits` bits (24 for f32, 11 for f16, 8 for bf16): exact in the target
 * dtype, so rounding to it can never reach 1. */
CLT_FN float clt_uniform_f32(clt_u32 x, int digits)
{
    return (float)(x >> (32 - digits)) * clt_bits_f32((clt_u32)(127 - digits) << 23);
}

/* ln(u) for u in (0, 1]: u = 2^e * m with m in [sqrt(1/2), sqrt(2)); ln(1 + f), f = m - 1, from
 * a degree-12 polynomial fitted on that range (absolute error below 4e-8). */
CLT_FN float clt_log_unit_f32(float u)
{
    clt_u32 bits = clt_f32_bits(u);
    clt_i32 e = (clt_i32)(bits >> 23) - 127;
    clt_u32 mbits = (bits & 0x7fffffu) | 0x3f800000u;
    if (mbits > 0x3fb504f3u) { /* m > sqrt(2): halve m exactly */
        mbits -= 0x00800000u;
        e += 1;
    }
    float f = clt_bits_f32(mbits) - 1.0f;
    float h = -0.06337685137987137f;
    h = clt_mulf(h, f) + 0.10608938336372375f;
    h = clt_mulf(h, f) - 0.10628578811883926f;
    h = clt_mulf(h, f) + 0.11023955047130585f;
    h = clt_mulf(h, f) - 0.12451203912496567f;
    h = clt_mulf(h, f) + 0.1428728550672531f;
    h = clt_mulf(h, f) - 0.16668008267879486f;
    h = clt_mulf(h, f) + 0.19999997317790985f;
    h = clt_mulf(h, f) - 0.24999989569187164f;
    h = clt_mulf(h, f) + 0.3333333432674408f;
    float f2 = clt_mulf(f, f);
    float l = f - clt_mulf(0.5f, f2) + clt_mulf(clt_mulf(f2, f), h);
    return clt_mulf((float)e, 0.693147180559945f) + l;
}

/* sqrt(s) for s >= 0 by Newton's iteration on 1/sqrt(s), multiplications only. */
CLT_FN float clt_sqrt_f32(float s)
{
    float y = clt_bits_f32(0x5f375a86u - (clt_f32_bits(s) >> 1));
    for (int i = 0; i < 4; i++)
        y = clt_mulf(y, 1.5f - clt_mulf(clt_mulf(clt_mulf(0.5f, s), y), y));
    return s * y;
}

/* sin and cos of 2*pi*k/2^24 for k in [0, 2^24): the quadrant comes from the integer, the
 * reduced angle lies in [-pi/4, pi/4]. */
CLT_FN void clt_sincos_turn_f32(clt_u32 k, float *s, float *c)
{
    clt_u32 q = k >> 22;
    clt_i32 r = (clt_i32)(k & 0x3fffffu);
    if (r >= 0x200000) {
        r -= 0x400000;
        q += 1;
    }
    float x = clt_mulf((float)r, 3.7450702829239286e-07f); /* (pi/2) / 2^22 */
    float x2 = clt_mulf(x, x);
    float sp = 2.755731922398589e-06f;
    sp = clt_mulf(sp, x2) - 0.0001984126984126984f;
    sp = clt_mulf(sp, x2) + 0.008333333333333333f;
    sp = clt_mulf(sp, x2) - 0.16666666666666666f;
    float sn = x + clt_mulf(clt_mulf(x, x2), sp);
    float cp = -2.755731922398589e-07f;
    cp = clt_mulf(cp, x2) + 2.48015873015873e-05f;
    cp = clt_mulf(cp, x2) - 0.001388888888888889f;
    cp = clt_mulf(cp, x2) + 0.041666666666666664f;
    cp = clt_mulf(cp, x2) - 0.5f;
    float cs = 1.0f + clt_mulf(x2, cp);
    /* quadrants 0..3 give (sin, cos) = (sn, cs), (cs, -sn), (-sn, -cs), (-cs, sn) */
    float s_ = (q & 1u) ? cs : sn, c_ = (q & 1u) ? sn : cs;
    *s = (q & 2u) ? -s_ : s_;
    *c = ((q + 1u) & 2u) ? -c_ : c_;
}

/* Two standard normal values from two 32-bit words (Box-Muller). */
CLT_FN void clt_normal2_f32(clt_u32 a, clt_u32 b, float *z0, float *z1)
{
    float u = (float)((a >> 8) + 1u) * 5.9604644775390625e-08f; /* (0, 1] */
    float r = clt_sqrt_f32(clt_mulf(-2.0f, clt_log_unit_f32(u)));
    float s, c;
    clt_sincos_turn_f32(b >> 8, &s, &c);
    *z0 = r * c;
    *z1 = r * s;
}

#if CLT_HAS_FP64
/* [0, 1) from 53 bits of two words: exact. */
CLT_FN double clt_uniform_f64(clt_u32 hi, clt_u32 lo)
{
    clt_u64 v = ((clt_u64)hi << 21) ^ (clt_u64)(lo >> 11);
    return (double)v * 1.1102230246251565e-16; /* 2^-53 */
}

/* ln(u) for u in (0, 1]: u = 2^e * m, m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(t),
 * t = (m - 1) / (m + 1), |t| < 0.172, by its series (f64 division is correctly rounded). */
CLT_FN double clt_log_unit_f64(double u)
{
    clt_u64 bits = clt_f64_bits(u);
    clt_i32 e = (clt_i32)(bits >> 52) - 1023;
    clt_u64 mbits = (bits & CLT_U64C(0xfffffffffffff)) | CLT_U64C(0x3ff0000000000000);
    if (mbits > CLT_U64C(0x3ff6a09e667f3bcd)) {
        mbits -= CLT_U64C(0x0010000000000000);
        e += 1;
    }
    double m = clt_bits_f64(mbits);
    double t = (m - 1.0) / (m + 1.0);
    double t2 = clt_muld(t, t);
    double p = 0.043478260869565216; /* 1/23, then 1/21 ... 1/1 */
    p = clt_muld(p, t2) + 0.047619047619047616;
    p = clt_muld(p, t2) + 0.05263157894736842;
    p = clt_muld(p, t2) + 0.058823529411764705;
    p = clt_muld(p, t2) + 0.06666666666666667;
    p = clt_muld(p, t2) + 0.07692307692307693;
    p = clt_muld(p, t2) + 0.09090909090909091;
    p = clt_muld(p, t2) + 0.1111111111111111;
    p = clt_muld(p, t2) + 0.14285714285714285;
    p = clt_muld(p, t2) + 0.2;
    p = clt_muld(p, t2) + 0.3333333333333333;
    p = clt_muld(p, t2) + 1.0;
    return clt_muld((double)e, 0.6931471805599453) + clt_muld(clt_muld(2.0, t), p);
}

/* sin and cos of 2*pi*k/2^52 for k in [0, 2^52). */
CLT_FN void clt_sincos_turn_f64(clt_u64 k, double *s, double *c)
{
    clt_u32 q = (clt_u32)(k >> 50);
    clt_i64 r = (clt_i64)(k & CLT_U64C(0x3ffffffffffff));
    if (r >= CLT_I64C(0x2000000000000)) {
        r -= CLT_I64C(0x4000000000000);
        q += 1;
    }
    double x = clt_muld((double)r, 1.3951473992034527e-15); /* (pi/2) / 2^50 */
    double x2 = clt_muld(x, x);
    /* Taylor series to x^21 and x^22: the remainder is below 1e-19 on |x| <= pi/4 */
    double sp = 1.9572941063391263e-20;
    sp = clt_muld(sp, x2) - 8.22063524662433e-18;
    sp = clt_muld(sp, x2) + 2.8114572543455206e-15;
    sp = clt_muld(sp, x2) - 7.647163731819816e-13;
    sp = clt_muld(sp, x2) + 1.6059043836821613e-10;
    sp = clt_muld(sp, x2) - 2.505210838544172e-08;
    sp = clt_muld(sp, x2) + 2.7557319223985893e-06;
    sp = clt_muld(sp, x2) - 0.0001984126984126984;
    sp = clt_muld(sp, x2) + 0.008333333333333333;
    sp = clt_muld(sp, x2) - 0.16666666666666666;
    double cp = -8.896791392450574e-22;
    cp = clt_muld(cp, x2) + 4.110317623312165e-19;
    cp = clt_muld(cp, x2) - 1.5619206968586225e-16;
    cp = clt_muld(cp, x2) + 4.779477332387385e-14;
    cp = clt_muld(cp, x2) - 1.1470745597729725e-11;
    cp = clt_muld(cp, x2) + 2.08767569878681e-09;
    cp = clt_muld(cp, x2) - 2.755731922398589e-07;
    cp = clt_muld(cp, x2) + 2.48015873015873e-05;
    cp = clt_muld(cp, x2) - 0.001388888888888889;
    cp = clt_muld(cp, x2) + 0.041666666666666664;
    cp = clt_muld(cp, x2) - 0.5;
    double sn = x + clt_muld(clt_muld(x, x2), sp);
    double cs = 1.0 + clt_muld(x2, cp);
    /* quadrants 0..3 give (sin, cos) = (sn, cs), (cs, -sn), (-sn, -cs), (-cs, sn) */
    double s_ = (q & 1u) ? cs : sn, c_ = (q & 1u) ? sn : cs;
    *s = (q & 2u) ? -s_ : s_;
    *c = ((q + 1u) & 2u) ? -c_ : c_;
}

/* Two standard normal values from four 32-bit words (Box-Muller in f64). */
CLT_FN void clt_normal2_f64(clt_u32 a, clt_u32 b, clt_u32 c, clt_u32 d, double *z0, double *z1)
{
    clt_u64 ua = (((clt_u64)a << 21) ^ (clt_u64)(b >> 11)) + 1u; /* (0, 2^53] */
    double u = (double)ua * 1.1102230246251565e-16;
    double r = sqrt(clt_muld(-2.0, clt_log_unit_f64(u)));
    clt_u64 k = (((clt_u64)c << 20) ^ (clt_u64)(d >> 12)); /* 52 bits */
    double s, cs;
    clt_sincos_turn_f64(k, &s, &cs);
    *z0 = r * cs;
    *z1 = r * s;
}
#endif

/* ---- conversions between every pair of dtypes ----------------------------------------------- */

/* Every dtype as (name, storage type, arithmetic kind): kind int loads as clt_i64, flt as
 * float, dbl as double. The order is that of clt_dtype; bool is spelled b8 because <stdbool.h>
 * makes `bool` a macro in C. */
#if CLT_HAS_FP64
#define CLT_IF_FP64(x) x
#else
#define CLT_IF_FP64(x)
#endif
#define CLT_DTYPES(X, ...)                                                                     \
    X(__VA_ARGS__, f32, float, flt)                                                            \
    CLT_IF_FP64(X(__VA_ARGS__, f64, double, dbl))                                              \
    X(__VA_ARGS__, f16, clt_u16, flt)                                                          \
    X(__VA_ARGS__, bf16, clt_u16, flt)                                                         \
    X(__VA_ARGS__, i32, clt_i32, int)                                                          \
    X(__VA_ARGS__, i64, clt_i64, int)                                                          \
    X(__VA_ARGS__, u8, clt_u8, int)                                                            \
    X(__VA_ARGS__, b8, clt_u8, int)
/* The same list under another name, for the inner loop of CLT_DTYPE_PAIRS. */
#define CLT_DTYPES2(X, ...)                                                                    \
    X(__VA_ARGS__, f32, float, flt)                                                            \
    CLT_IF_FP64(X(__VA_ARGS__, f64, double, dbl))                                              \
    X(__VA_ARGS__, f16, clt_u16, flt)                                                          \
    X(__VA_ARGS__, bf16, clt_u16, flt)                                                         \
    X(__VA_ARGS__, i32, clt_i32, int)                                                          \
    X(__VA_ARGS__, i64, clt_i64, int)                                                          \
    X(__VA_ARGS__, u8, clt_u8, int)                                                            \
    X(__VA_ARGS__, b8, clt_u8, int)
#define CLT__PAIR_ROW(M, S, ST, SK) CLT_DTYPES2(M, S, ST, SK)
/* M(S, ST, SK, D, DT, DK) for every source S and destination D. */
#define CLT_DTYPE_PAIRS(M) CLT_DTYPES(CLT__PAIR_ROW, M)

#define clt_load_f32(x) (x)
#define clt_load_f64(x) (x)
#define clt_load_f16(x) clt_f16_to_f32(x)
#define clt_load_bf16(x) clt_bf16_to_f32(x)
#define clt_load_i32(x) ((clt_i64)(x))
#define clt_load_i64(x) (x)
#define clt_load_u8(x) ((clt_i64)(x))
#define clt_load_b8(x) ((clt_i64)(x))

#define clt_flt_to_f32(v) (v)
#define clt_flt_to_f16(v) clt_f32_to_f16(v)
#define clt_flt_to_bf16(v) clt_f32_to_bf16(v)
#define clt_flt_to_i32(v) clt_f32_to_i32(v)
#define clt_flt_to_i64(v) clt_f32_to_i64(v)
#define clt_flt_to_u8(v) clt_f32_to_u8(v)
#define clt_flt_to_b8(v) clt_f32_to_bool(v)
#define clt_flt_to_f64(v) clt_f32_to_f64(v)

#define clt_int_to_f32(v) ((float)(v))
#define clt_int_to_f16(v) clt_f32_to_f16((float)(v))
#define clt_int_to_bf16(v) clt_f32_to_bf16((float)(v))
#define clt_int_to_i32(v) clt_i64_to_i32(v)
#define clt_int_to_i64(v) (v)
#define clt_int_to_u8(v) ((clt_u8)((clt_u64)(v) & 0xffu))
#define clt_int_to_b8(v) ((clt_u8)((v) != 0))
#define clt_int_to_f64(v) ((double)(v))

#define clt_dbl_to_f32(v) clt_f64_to_f32(v)
#define clt_dbl_to_f64(v) (v)
#define clt_dbl_to_f16(v) clt_f32_to_f16(clt_f64_to_f32(v))
#define clt_dbl_to_bf16(v) clt_f32_to_bf16(clt_f64_to_f32(v))
#define clt_dbl_to_i32(v) clt_f64_to_i32(v)
#define clt_dbl_to_i64(v) clt_f64_to_i64(v)
#define clt_dbl_to_u8(v) clt_f64_to_u8(v)
#define clt_dbl_to_b8(v) clt_f64_to_bool(v)

/* clt_cvt_S_D(x): one element of dtype S as dtype D. */
#define CLT__DEFINE_CVT(S, ST, SK, D, DT, DK)                                                  \
    CLT_FN DT clt_cvt_##S##_##D(ST x)                                                          \
    {                                                                                          \
        return (DT)clt_##SK##_to_##D(clt_load_##S(x));                                         \
    }
CLT_DTYPE_PAIRS(CLT__DEFINE_CVT)

/* ---- random blocks: one Philox counter gives 4 f32 values or 2 f64 values -------------------- */

/* Four values from one counter: normal, or uniform with `digits` bits of precision. */
CLT_FN void clt_random_block_f32(int normal, int digits, clt_u64 counter, clt_u32 k0, clt_u32 k1,
                                 float *out)
{
    clt_u32 r[4];
    clt_philox((clt_u32)counter, (clt_u32)(counter >> 32), k0, k1, r);
    if (normal) {
        clt_normal2_f32(r[0], r[1], &out[0], &out[1]);
        clt_normal2_f32(r[2], r[3], &out[2], &out[3]);
    } else {
        for (int j = 0; j < 4; j++)
            out[j] = clt_uniform_f32(r[j], digits);
    }
}

#if CLT_HAS_FP64
CLT_FN void clt_random_block_f64(int normal, clt_u64 counter, clt_u32 k0, clt_u32 k1, double *out)
{
    clt_u32 r[4];
    clt_philox((clt_u32)counter, (clt_u32)(counter >> 32), k0, k1, r);
    if (normal) {
        clt_normal2_f64(r[0], r[1], r[2], r[3], &out[0], &out[1]);
    } else {
        out[0] = clt_uniform_f64(r[0], r[1]);
        out[1] = clt_uniform_f64(r[2], r[3]);
    }
}
#endif
