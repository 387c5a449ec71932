/* heapprof--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION heapprof UPDATE TO '1.2'" to load this file. \quit

-- Every object is qualified, operators are pg_catalog's and the functions
-- written in SQL run with a fixed search_path ("Security Considerations for
-- Extension Scripts").  A fresh CREATE EXTENSION runs 1.0, 1.1 and then this
-- script, so an install and an update cannot differ.
