//! The lang items the kernels need, because the nvptx64 target has no `core` on this machine.
//!
//! Each item here is a compiler hook that `core` normally provides. Their set and shape belong
//! to one rustc release (the one `rust-toolchain.toml` pins): a new release may rename or add
//! items, which is why the generated PTX is committed and reused when the toolchain differs.
#![allow(dead_code)] // the trait methods exist for the type checker; the compiler lowers the operators itself

#[lang = "pointee_sized"]
pub trait PointeeSized {}
#[lang = "meta_sized"]
pub trait MetaSized: PointeeSized {}
#[lang = "sized"]
pub trait Sized: MetaSized {}

/// Lets `&self` and `&mut self` methods exist (the operator impls below use them).
#[lang = "legacy_receiver"]
pub trait LegacyReceiver {}
impl<T: ?Sized> LegacyReceiver for &T {}
impl<T: ?Sized> LegacyReceiver for &mut T {}

#[lang = "copy"]
pub trait Copy {}
impl Copy for bool {}
impl Copy for u32 {}
impl Copy for u64 {}
impl Copy for isize {}
impl<T: ?Sized> Copy for *mut T {}
impl<T: ?Sized> Copy for *const T {}
impl<T: Copy, const N: usize> Copy for [T; N] {}

/// Declares a binary operator lang item and implements it for `u32` and `u64` with the
/// primitive operation (which the compiler lowers directly; the impl only type-checks it).
macro_rules! binary_op {
    ($lang:literal, $trait:ident, $method:ident, $op:tt) => {
        #[lang = $lang]
        pub trait $trait<Rhs = Self> {
            type Output;
            fn $method(self, rhs: Rhs) -> Self::Output;
        }
        impl $trait for u32 {
            type Output = u32;
            #[inline(always)]
            fn $method(self, rhs: u32) -> u32 {
                self $op rhs
            }
        }
        impl $trait for u64 {
            type Output = u64;
            #[inline(always)]
            fn $method(self, rhs: u64) -> u64 {
                self $op rhs
            }
        }
    };
}
binary_op!("add", Add, add, +);
binary_op!("mul", Mul, mul, *);
binary_op!("bitxor", BitXor, bitxor, ^);
binary_op!("bitand", BitAnd, bitand, &);

#[lang = "shr"]
pub trait Shr<Rhs = Self> {
    type Output;
    fn shr(self, rhs: Rhs) -> Self::Output;
}
impl Shr<u32> for u64 {
    type Output = u64;
    #[inline(always)]
    fn shr(self, rhs: u32) -> u64 {
        self >> rhs
    }
}

#[lang = "add_assign"]
pub trait AddAssign<Rhs = Self> {
    fn add_assign(&mut self, rhs: Rhs);
}
impl AddAssign for u32 {
    #[inline(always)]
    fn add_assign(&mut self, rhs: u32) {
        *self += rhs
    }
}
impl AddAssign for u64 {
    #[inline(always)]
    fn add_assign(&mut self, rhs: u64) {
        *self += rhs
    }
}

#[lang = "partial_ord"]
pub trait PartialOrd<Rhs: ?Sized = Self> {
    fn lt(&self, other: &Rhs) -> bool;
}
impl PartialOrd for u32 {
    #[inline(always)]
    fn lt(&self, other: &u32) -> bool {
        *self < *other
    }
}
impl PartialOrd for u64 {
    #[inline(always)]
    fn lt(&self, other: &u64) -> bool {
        *self < *other
    }
}

#[lang = "eq"]
pub trait PartialEq<Rhs: ?Sized = Self> {
    fn eq(&self, other: &Rhs) -> bool;
    fn ne(&self, other: &Rhs) -> bool;
}
macro_rules! eq_impl {
    ($($t:ty),*) => {$(
        impl PartialEq for $t {
            #[inline(always)]
            fn eq(&self, other: &$t) -> bool {
                *self == *other
            }
            #[inline(always)]
            fn ne(&self, other: &$t) -> bool {
                *self != *other
            }
        }
    )*};
}
eq_impl!(u32, u64);
