// The integer a hexadecimal text writes (Stream Analytics calls it udf.Hex2Int).
function hex2Int(hexValue) {
    return parseInt(hexValue, 16);
}
