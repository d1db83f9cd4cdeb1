// Typed errors thrown at the kernel API boundary. Kernels never print, exit or abort:
// they throw one of these, carrying the rule that was broken and the offending value.
// The Python binding maps each to an exception class in dpcore.errors.
#pragma once

#include <stdexcept>
#include <string>

namespace dpcore {

/// Base class of every error the kernels throw.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An argument breaks a documented rule (bad size, mismatched shapes, unknown attribute, ...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// A record holds a code outside its attribute's domain [0, size).
class DomainError : public Error {
 public:
  using Error::Error;
};

/// A table's cell count overflows 64 bits or exceeds the memory cap.
class TableTooLarge : public Error {
 public:
  using Error::Error;
};

}  // namespace dpcore
